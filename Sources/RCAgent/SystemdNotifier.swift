internal import CSystemd

/// sd_notify(3) through libsystemd: READY=1, STATUS=, WATCHDOG=1, STOPPING=1. Without
/// `NOTIFY_SOCKET` (not started by systemd) every call is a no-op.
public struct SystemdNotifier: Sendable {
    public init() {}

    public func ready(status: String) { send("READY=1\nSTATUS=\(status)") }
    public func status(_ text: String) { send("STATUS=\(text)") }
    public func watchdog() { send("WATCHDOG=1") }
    public func stopping() { send("STOPPING=1\nSTATUS=Shutting down") }

    /// The watchdog interval systemd asks for (`WatchdogSec=`), if any. Ping at half of it.
    public var watchdogInterval: Duration? {
        var usec: UInt64 = 0
        guard sd_watchdog_enabled(0, &usec) > 0, usec > 0 else { return nil }
        return .microseconds(Int64(usec))
    }

    private func send(_ state: String) {
        _ = sd_notify(0, state)
    }
}
