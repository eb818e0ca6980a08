@preconcurrency import Dispatch
import Glibc

/// A descriptor the kernel signals through (inotify, netlink, timerfd, the signal pipe), read on its own dispatch queue when it
/// becomes readable: no thread of ours and no wakeup while it is quiet. Owns the descriptor.
final class DescriptorWatch: @unchecked Sendable {
    private let queue: DispatchQueue
    private var source: (any DispatchSourceRead)?

    init(fd: Int32, label: String, onReadable: @escaping @Sendable (Int32) -> Void) {
        queue = DispatchQueue(label: label)
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { onReadable(fd) }
        source.setCancelHandler { close(fd) }
        source.resume()
        self.source = source
    }

    func stop() {
        queue.sync {
            source?.cancel()
            source = nil
        }
    }
}
