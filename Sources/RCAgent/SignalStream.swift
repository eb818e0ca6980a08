import Glibc
import RCCore

/// The write end of the signal pipe, for the handler (a C function pointer cannot capture).
nonisolated(unsafe) private var signalPipe: Int32 = -1

/// Termination and reload signals as an async sequence, through the self-pipe pattern: a handler
/// installed with sigaction writes the signal's number to a pipe, read through a
/// ``DescriptorWatch``. Whichever thread the kernel picks runs the handler, so no signal is lost;
/// libdispatch's signal sources could lose one sent right after start-up, while a thread that does
/// not block it (the main thread, parked in `dispatch_main`) took it first under `SIG_IGN`.
final class SignalStream: Sendable {
    let stream: AsyncStream<Int32>
    private let watch: DescriptorWatch

    init(_ signals: [Int32]) throws {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw SystemError("pipe") }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
        }
        signalPipe = ends[1]
        let (stream, continuation) = AsyncStream<Int32>.makeStream()
        self.stream = stream
        watch = DescriptorWatch(fd: ends[0], label: "rcagent.signals") { fd in
            var numbers = [UInt8](repeating: 0, count: 64)
            while true {
                let n = numbers.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n <= 0 { break }
                for number in numbers[0..<n] { continuation.yield(Int32(number)) }
            }
        }
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { number in
            let saved = errno
            var byte = UInt8(truncatingIfNeeded: number)
            _ = write(signalPipe, &byte, 1)
            errno = saved
        }
        action.sa_flags = SA_RESTART
        sigemptyset(&action.sa_mask)
        for number in signals where sigaction(number, &action, nil) != 0 {
            throw SystemError("sigaction \(number)")
        }
    }
}
