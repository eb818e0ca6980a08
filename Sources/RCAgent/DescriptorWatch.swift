@preconcurrency import Dispatch
import Glibc
import RCCore
import RCSystem

/// A descriptor the kernel signals through (inotify, netlink, timerfd, the signal pipe), read on its own dispatch queue when it
/// becomes readable: no thread of ours and no wakeup while it is quiet. Owns the descriptor.
final class DescriptorWatch: @unchecked Sendable {
    private let queue: DispatchQueue
    private var source: (any DispatchSourceRead)?

    init(_ descriptor: consuming FileDescriptor, label: String, onReadable: @escaping @Sendable (Int32) -> Void) {
        queue = DispatchQueue(label: label)
        // Handed to the source: the kernel may still report it readable until the source is
        // cancelled, so it closes in the cancel handler, after the last event handler ran.
        let fd = descriptor.release()
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { onReadable(fd) }
        source.setCancelHandler { FileDescriptor(fd).close() }
        source.resume()
        self.source = source
    }

    /// Takes ownership of `fd`, an open descriptor (the signal pipe's read end).
    convenience init(fd: Int32, label: String, onReadable: @escaping @Sendable (Int32) -> Void) {
        self.init(FileDescriptor(fd), label: label, onReadable: onReadable)
    }

    func stop() {
        queue.sync {
            source?.cancel()
            source = nil
        }
    }
}
