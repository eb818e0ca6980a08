internal import CSystemd
@preconcurrency import Dispatch
import Synchronization

/// sd_notify(3) through libsystemd: READY=1, STATUS=, WATCHDOG=1, STOPPING=1. Without
/// `NOTIFY_SOCKET` (not started by systemd) every call is a no-op.
///
/// Messages go out in order from a queue of their own: sd_notify blocks while the receiver's
/// queue is full, and that must never stall the agent. A STATUS= equal to the last one is skipped.
public final class SystemdNotifier: Sendable {
    private let queue = DispatchQueue(label: "rcagent.notify")
    private let lastStatus = Mutex<String>("")

    public init() {}

    public func ready(status: String) { send("READY=1\nSTATUS=\(status)", status: status) }
    public func status(_ text: String) { send("STATUS=\(text)", status: text) }
    public func watchdog() { send("WATCHDOG=1") }
    public func stopping() { send("STOPPING=1\nSTATUS=Shutting down", status: "Shutting down") }

    /// Waits up to `timeout` for queued messages to go out (before the process exits).
    public func flush(timeout: Duration = .seconds(1)) {
        let done = DispatchSemaphore(value: 0)
        queue.async { done.signal() }
        _ = done.wait(timeout: .now() + .milliseconds(Int(timeout.milliseconds)))
    }

    /// The watchdog interval systemd asks for (`WatchdogSec=`), if any. Ping at half of it.
    public var watchdogInterval: Duration? {
        var usec: UInt64 = 0
        guard sd_watchdog_enabled(0, &usec) > 0, usec > 0 else { return nil }
        return .microseconds(Int64(usec))
    }

    private func send(_ state: String, status: String? = nil) {
        if let status {
            let unchanged = lastStatus.withLock { last in
                defer { last = status }
                return last == status && !state.contains("=1")
            }
            if unchanged { return }
        }
        queue.async { _ = sd_notify(0, state) }
    }
}
