import CLinux
import Glibc
import RCCore
import RCSystem

/// Tells the agent when the wall clock was set: `date`, NTP stepping it, and a resume from suspend,
/// which the kernel reports the same way. A timerfd armed on CLOCK_REALTIME far in the future with
/// TFD_TIMER_CANCEL_ON_SET is cancelled by every such change.
final class ClockWatch: Sendable {
    private let watch: DescriptorWatch

    init(onChange: @escaping @Sendable () -> Void) throws {
        guard let timer = FileDescriptor(returnedBy: timerfd_create(CLOCK_REALTIME, Int32(TFD_NONBLOCK | TFD_CLOEXEC)))
        else { throw SystemError("timerfd_create") }
        guard Self.arm(timer.rawValue) else { throw SystemError("timerfd_settime") }
        watch = DescriptorWatch(timer, label: "rcagent.clock") { fd in
            var expirations: UInt64 = 0
            guard read(fd, &expirations, MemoryLayout<UInt64>.size) < 0 && errno == ECANCELED else { return }
            _ = Self.arm(fd)
            onChange()
        }
    }

    func stop() { watch.stop() }

    /// Arms the timer for a time that never comes (the year 2500), cancelled when the clock is set.
    private static func arm(_ fd: Int32) -> Bool {
        var spec = itimerspec()
        spec.it_value.tv_sec = 16_725_225_600
        return timerfd_settime(fd, Int32(TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET), &spec, nil) == 0
    }
}
