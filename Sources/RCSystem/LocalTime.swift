import RCCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Wall-clock time in the system's local zone or a named IANA zone, by the C library's own tzfile
/// reader (`localtime_r`, `mktime` with `TZ`): the zone rules, DST included, come from the system's
/// zone database, never from this code.
///
/// glibc has no per-call zone, so a named zone is `TZ` set for the call and put back after it. Every
/// conversion here runs under one lock, so two never see each other's `TZ`; code elsewhere in the
/// process that reads local time at that moment could (nothing in rcagent does: it logs and stores UTC).
public enum LocalTime {
    /// A local date and time of day.
    public struct Parts: Sendable, Equatable {
        public var year: Int
        /// 1...12
        public var month: Int
        /// 1...31
        public var day: Int
        /// 0 = Sunday.
        public var weekday: Int
        /// Seconds after local midnight (up to 86,399; a leap second is not seen).
        public var secondOfDay: Int
        /// The offset from UTC in seconds (east positive).
        public var utcOffset: Int
    }

    private static let lock = Mutex(())

    /// The local date and time of `instant` in `zone` (`nil`: the system's local time).
    public static func parts(of instant: Timestamp, zone: String?) -> Parts {
        var seconds = time_t(instant.milliseconds.floorDivided(by: 1_000))
        var broken = tm()
        withZone(zone) { _ = localtime_r(&seconds, &broken) }
        return Parts(
            year: Int(broken.tm_year) + 1900, month: Int(broken.tm_mon) + 1, day: Int(broken.tm_mday),
            weekday: Int(broken.tm_wday),
            secondOfDay: Int(broken.tm_hour) * 3600 + Int(broken.tm_min) * 60 + Int(min(broken.tm_sec, 59)),
            utcOffset: Int(broken.tm_gmtoff))
    }

    /// The instant the wall clock in `zone` reads `year-month-day` at `minute` minutes after
    /// midnight (day and minute may overflow; they are normalized), as `mktime` resolves it: a time
    /// the clocks skip resolves to one after the jump, a repeated one to one of its two instants.
    public static func instant(year: Int, month: Int, day: Int, minute: Int, zone: String?) -> Timestamp {
        var broken = tm()
        broken.tm_year = Int32(year - 1900)
        broken.tm_mon = Int32(month - 1)
        broken.tm_mday = Int32(day)
        broken.tm_hour = 0
        broken.tm_min = Int32(minute)
        broken.tm_sec = 0
        broken.tm_isdst = -1
        var result: time_t = 0
        withZone(zone) { result = mktime(&broken) }
        return Timestamp(milliseconds: Int64(result) * 1_000)
    }

    private static func withZone(_ zone: String?, _ body: () -> Void) {
        lock.withLock { _ in
            guard let zone else {
                tzset()
                return body()
            }
            let saved = getenv("TZ").map { String(cString: $0) }
            // The leading ':' makes glibc read the zone file by name, never parse it as a POSIX rule.
            setenv("TZ", ":" + zone, 1)
            tzset()
            body()
            if let saved { setenv("TZ", saved, 1) } else { unsetenv("TZ") }
            tzset()
        }
    }
}

/// IANA zone names (`Europe/Berlin`, `UTC`) the system's zone database holds. A name glibc cannot
/// find would silently mean UTC, so a config names only zones whose file exists.
extension TimeZoneName {
    /// The zone database: `TZDIR` when set (as glibc reads it), else Debian's.
    static var directory: String {
        if let dir = getenv("TZDIR"), dir.pointee != 0 { return String(cString: dir) }
        return "/usr/share/zoneinfo"
    }

    /// Whether `name` is a well-formed zone name with a TZif file in the zone database.
    public static func exists(_ name: String) -> Bool {
        guard isWellFormed(name) else { return false }
        let fd = open(directory + "/" + name, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var magic = [UInt8](repeating: 0, count: 4)
        let n = magic.withUnsafeMutableBytes { read(fd, $0.baseAddress, 4) }
        return n == 4 && magic == Array("TZif".utf8)
    }
}
