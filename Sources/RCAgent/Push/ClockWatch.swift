import CLinux
@preconcurrency import Dispatch
import Glibc
import RCCore

/// Tells the agent when the wall clock was set: `date`, NTP stepping it, and a resume from suspend,
/// which the kernel reports the same way. A timerfd armed on CLOCK_REALTIME far in the future with
/// TFD_TIMER_CANCEL_ON_SET is cancelled by every such change; read through a dispatch source, it
/// costs no wakeup while the clock runs on.
final class ClockWatch: @unchecked Sendable {
    private let onChange: @Sendable () -> Void
    private let queue = DispatchQueue(label: "rcagent.clock")
    private var source: (any DispatchSourceRead)?
    private var fd: Int32 = -1

    init(onChange: @escaping @Sendable () -> Void) {
        self.onChange = onChange
    }

    func start() throws {
        fd = timerfd_create(CLOCK_REALTIME, Int32(TFD_NONBLOCK | TFD_CLOEXEC))
        guard fd >= 0 else { throw SystemError("timerfd_create") }
        guard arm() else {
            let error = SystemError("timerfd_settime")
            close(fd)
            fd = -1
            throw error
        }
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [self] in drain() }
        source.resume()
        self.source = source
    }

    func stop() {
        queue.sync {
            source?.cancel()
            source = nil
            if fd >= 0 { close(fd) }
            fd = -1
        }
    }

    /// Arms the timer for a time that never comes (the year 2500), cancelled when the clock is set.
    private func arm() -> Bool {
        var spec = itimerspec()
        spec.it_value.tv_sec = 16_725_225_600
        return timerfd_settime(fd, Int32(TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET), &spec, nil) == 0
    }

    private func drain() {
        var expirations: UInt64 = 0
        let n = read(fd, &expirations, MemoryLayout<UInt64>.size)
        guard n < 0 && errno == ECANCELED else { return }
        _ = arm()
        onChange()
    }
}
