#if canImport(Glibc)
import Glibc
#endif

/// Wall-clock instants as whole milliseconds since the Unix epoch: what the store keeps and
/// what status prints in ISO 8601 (UTC, `2026-11-29T13:34:45Z`).
public struct Timestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let milliseconds: Int64

    public init(milliseconds: Int64) { self.milliseconds = milliseconds }

    public static func now() -> Timestamp {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Timestamp(milliseconds: Int64(spec.tv_sec) * 1_000 + Int64(spec.tv_nsec) / 1_000_000)
    }

    public static func < (a: Timestamp, b: Timestamp) -> Bool { a.milliseconds < b.milliseconds }

    public static func + (t: Timestamp, d: Duration) -> Timestamp { Timestamp(milliseconds: t.milliseconds + d.milliseconds) }

    /// `later - earlier` as a duration.
    public static func - (a: Timestamp, b: Timestamp) -> Duration { .milliseconds(a.milliseconds - b.milliseconds) }

    public var iso8601: String {
        var seconds = time_t(milliseconds.floorDivided(by: 1_000))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ n: Int32, _ width: Int = 2) -> String {
            let s = String(n)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1))-\(pad(parts.tm_mday))T"
            + "\(pad(parts.tm_hour)):\(pad(parts.tm_min)):\(pad(parts.tm_sec))Z"
    }

    public var description: String { iso8601 }
}

extension Int64 {
    func floorDivided(by d: Int64) -> Int64 {
        let q = self / d
        return (self % d != 0 && (self < 0) != (d < 0)) ? q - 1 : q
    }
}
