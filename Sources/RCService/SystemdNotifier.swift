internal import CSystemd
@preconcurrency import Dispatch
import Glibc
import RCCore
import RCSystem
import Synchronization

/// sd_notify(3) through libsystemd: READY=1, STATUS=, WATCHDOG=1, STOPPING=1. Without
/// `NOTIFY_SOCKET` (not started by systemd) every call is a no-op.
///
/// Messages go out in order from a queue of their own: sd_notify blocks while the receiver's
/// queue is full, and that must never stall the agent. A STATUS= equal to the last one is skipped.
///
/// STATUS= text is sanitised here, so no caller can forget: sd_notify separates assignments by
/// newlines, and a template version or error quoted into the status line could otherwise send
/// `MAINPID=` or `WATCHDOG=trigger` of its own. It is cut to ``maxStatusBytes``.
public final class SystemdNotifier: Sendable {
    /// systemd shows STATUS= in one line of `systemctl status`; more is noise (and memory in PID 1).
    public static let maxStatusBytes = 512

    private let queue = DispatchQueue(label: "rcagent.notify")
    private let lastStatus = Mutex<String>("")

    public init() {}

    /// The cache is loaded and the socket answers (Type=notify: systemd considers the start done).
    public func ready(status: String) { send("READY=1", status: status) }
    public func status(_ text: String) { send(nil, status: text) }
    /// The daemon is alive: sent at half of `WatchdogSec=`, only while the agent answers.
    public func watchdog() { send("WATCHDOG=1") }
    public func stopping() { send("STOPPING=1", status: "Shutting down") }
    /// A reload starts; ``ready(status:)`` says it is over. MONOTONIC_USEC= is the time systemd
    /// (253 and later, `Type=notify-reload`) matches against the reload it asked for.
    public func reloading() {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        send(
            "RELOADING=1\nMONOTONIC_USEC=\(Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1_000)",
            status: "Reloading")
    }

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

    /// Sends `assignment` (our own `NAME=1`) and `STATUS=` with `status` made one bounded line.
    private func send(_ assignment: String?, status: String? = nil) {
        let status = status.map { TextEscaping.notifyStatus($0, maxBytes: Self.maxStatusBytes) }
        if let status {
            let unchanged = lastStatus.withLock { last in
                defer { last = status }
                return last == status
            }
            // A bare STATUS= equal to the last one says nothing new; READY=1 or STOPPING=1 still go out.
            if unchanged && assignment == nil { return }
        }
        let message = [assignment, status.map { "STATUS=" + $0 }].compactMap { $0 }.joined(separator: "\n")
        queue.async { _ = sd_notify(0, message) }
    }
}
