@preconcurrency import Dispatch
import Glibc
import RCCore
import RCSystem

/// The write end of the signal pipe, for the handler (a C function pointer cannot capture).
nonisolated(unsafe) private var signalPipe: Int32 = -1

/// Termination and reload signals as an async sequence, through the self-pipe pattern: a handler
/// installed with sigaction writes the signal's number to a pipe, read on a dispatch queue of its
/// own. Whichever thread the kernel picks runs the handler, so no signal is lost: one sent before
/// anyone iterates waits in the pipe. libdispatch's signal sources could lose one sent right after
/// start-up, while a thread that did not block it took it first under `SIG_IGN`. One per process
/// (the handler writes to one pipe): ``Lifecycle`` makes it, first thing.
public final class SignalStream: Sendable {
    public let stream: AsyncStream<Int32>
    private let source: any DispatchSourceRead

    init(_ signals: [Int32]) throws(SystemError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw SystemError("pipe") }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
        }
        signalPipe = ends[1]
        let (stream, continuation) = AsyncStream<Int32>.makeStream()
        self.stream = stream
        let fd = ends[0]
        source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: DispatchQueue(label: "rc.signals"))
        source.setEventHandler {
            var numbers = [UInt8](repeating: 0, count: 64)
            while true {
                let n = numbers.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n <= 0 { break }
                for number in numbers[0..<n] { continuation.yield(Int32(number)) }
            }
        }
        source.resume()
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { number in
            let saved = errno
            var byte = UInt8(truncatingIfNeeded: number)
            _ = write(signalPipe, &byte, 1)
            errno = saved
        }
        action.sa_flags = SA_RESTART
        sigemptyset(&action.sa_mask)
        var caught = sigset_t()
        sigemptyset(&caught)
        for number in signals {
            guard sigaction(number, &action, nil) == 0 else { throw SystemError("sigaction \(number)") }
            sigaddset(&caught, number)
        }
        // A mask inherited blocked (a parent that blocks SIGTERM) would keep the handler from ever running.
        pthread_sigmask(SIG_UNBLOCK, &caught, nil)
    }
}
