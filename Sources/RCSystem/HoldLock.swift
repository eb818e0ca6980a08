import RCCore

#if canImport(Glibc)
    import Glibc
#endif

/// The hold lock: `rcagent hold` takes it shared (`flock(2)` `LOCK_SH`, as `flock(1)` would) for as
/// long as its command runs; the daemon asks whether anyone holds it by trying it exclusive without
/// waiting. The file is `hold.lock` in the state directory, mode 0644: anyone who may read the
/// state may hold off activations (a shared lock needs only a descriptor open for reading).
public final class HoldLock: Sendable {
    /// The lock file for a state directory.
    public static func path(stateDirectory: String) -> String { stateDirectory + "/hold.lock" }

    public let path: String
    private let fd: Int32

    /// Opens the lock file, creating it (0644) when missing and this user may.
    public init(path: String) throws(SystemError) {
        self.path = path
        var fd = Posix.retrying { open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) }
        if fd < 0 && errno == ENOENT {
            fd = Posix.retrying { open(path, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644) }
            // The umask may have taken read bits away; others must be able to open it.
            if fd >= 0 { _ = fchmod(fd, 0o644) }
        }
        guard fd >= 0 else { throw SystemError("open \(path)") }
        self.fd = fd
    }

    deinit { close(fd) }

    /// Takes the lock shared, waiting while the daemon briefly holds it exclusive to look.
    public func holdShared() throws(SystemError) {
        guard Posix.retrying({ flock(fd, LOCK_SH) }) == 0 else { throw SystemError("flock \(path)") }
    }

    /// Whether some process holds the lock (shared): tried exclusive without waiting and let go at once.
    public func isHeld() throws(SystemError) -> Bool {
        if Posix.retrying({ flock(fd, LOCK_EX | LOCK_NB) }) == 0 {
            _ = flock(fd, LOCK_UN)
            return false
        }
        guard errno == EWOULDBLOCK else { throw SystemError("flock \(path)") }
        return true
    }

    /// The processes holding the lock now, from `/proc/locks`, with when each started and the reason
    /// its `rcagent hold --reason` gave. Empty when nobody holds it (or `/proc` does not say).
    public func holders() -> [Hold] {
        var info = stat()
        guard fstat(fd, &info) == 0, let locks = try? FileBytes.read("/proc/locks") else { return [] }
        let major = (UInt64(info.st_dev) >> 8) & 0xfff | ((UInt64(info.st_dev) >> 32) & ~0xfff)
        let minor = (UInt64(info.st_dev) & 0xff) | ((UInt64(info.st_dev) >> 12) & ~0xff)
        let boot = Self.bootTime()
        var holds: [Hold] = []
        for line in locks.split(separator: 10) {
            // "1: FLOCK  ADVISORY  READ 4242 08:01:1234 0 EOF"; a waiter's line has "->" after the number.
            let fields = line.split(separator: 32).map { String(decoding: $0, as: UTF8.self) }
            guard fields.count >= 6, fields[1] == "FLOCK", fields[3] == "READ", let pid = Int32(fields[4]) else {
                continue
            }
            let device = fields[5].split(separator: ":")
            guard device.count == 3, UInt64(device[0], radix: 16) == major, UInt64(device[1], radix: 16) == minor,
                UInt64(device[2]) == UInt64(info.st_ino)
            else { continue }
            holds.append(Hold(pid: pid, since: Self.startTime(of: pid, boot: boot), reason: Self.reason(of: pid)))
        }
        return holds.sorted { $0.pid < $1.pid }
    }

    private static func bootTime() -> Int64? {
        guard let bytes = try? FileBytes.read("/proc/stat") else { return nil }
        for line in bytes.split(separator: 10) where line.starts(with: Array("btime ".utf8)) {
            return Int64(String(decoding: line.dropFirst(6), as: UTF8.self))
        }
        return nil
    }

    /// When `pid` started: field 22 of `/proc/<pid>/stat`, in clock ticks after boot.
    private static func startTime(of pid: Int32, boot: Int64?) -> Timestamp? {
        guard let boot, let bytes = try? FileBytes.read("/proc/\(pid)/stat"),
            // The command name (field 2) may hold spaces and parentheses: count after its last ')'.
            let close = bytes.lastIndex(of: 0x29)
        else { return nil }
        let fields = bytes[(close + 1)...].split(separator: 32)
        // Fields 3... follow the name: the start time (field 22) is the 20th of them.
        guard fields.count >= 20, let ticks = Int64(String(decoding: fields[19], as: UTF8.self)) else { return nil }
        let hertz = Int64(sysconf(Int32(_SC_CLK_TCK)))
        guard hertz > 0 else { return nil }
        return Timestamp(milliseconds: boot * 1_000 + ticks * 1_000 / hertz)
    }

    /// The `--reason` of the `rcagent hold` command line of `pid`, if it gave one.
    private static func reason(of pid: Int32) -> String? {
        guard let bytes = try? FileBytes.read("/proc/\(pid)/cmdline") else { return nil }
        let arguments = bytes.split(separator: 0, omittingEmptySubsequences: false).map {
            String(decoding: $0, as: UTF8.self)
        }
        for (index, argument) in arguments.enumerated() {
            if argument == "--" { break }
            if argument == "--reason", index + 1 < arguments.count { return arguments[index + 1] }
            if argument.hasPrefix("--reason=") { return String(argument.dropFirst(9)) }
        }
        return nil
    }
}

/// One process holding off activations.
public struct Hold: Sendable, Equatable {
    public var pid: Int32
    /// When the holding process started (`nil` when `/proc` does not say).
    public var since: Timestamp?
    public var reason: String?

    public init(pid: Int32, since: Timestamp?, reason: String?) {
        self.pid = pid
        self.since = since
        self.reason = reason
    }
}

/// `HoldLimit=` as a policy: holds younger than the limit defer activations; once every hold is
/// older, they stop deferring (and the daemon says so once per hold).
public struct HoldPolicy: Sendable, Equatable {
    public var limit: Duration

    public init(limit: Duration) { self.limit = limit }

    public enum Verdict: Sendable, Equatable {
        /// Nobody holds off activations.
        case free
        /// Deferred; `until` is when the youngest hold reaches the limit (`nil`: not known).
        case held(until: Timestamp?)
        /// Holds there are, all older than the limit: forgotten, they defer nothing.
        case expired([Hold])
    }

    /// The verdict for `holds` at `now`. A hold whose start is unknown counts from `now`: the
    /// caller passes the time it first saw it instead, so the limit still comes.
    public func verdict(_ holds: [Hold], at now: Timestamp) -> Verdict {
        guard !holds.isEmpty else { return .free }
        let ends = holds.map { ($0.since ?? now) + limit }.filter { $0 > now }
        guard let last = ends.max() else { return .expired(holds) }
        return .held(until: last)
    }
}
