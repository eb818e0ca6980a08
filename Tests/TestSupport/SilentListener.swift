import Glibc

/// A TCP socket on 127.0.0.1 that listens and never accepts: the kernel completes a client's
/// connection, the client sends its request, and nothing ever answers (a hung server or broker).
public final class SilentListener {
    private let descriptor: Int32
    /// The port it listens on (chosen by the kernel).
    public let port: Int

    public init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(descriptor, raw, length) == 0 && listen(descriptor, 8) == 0
                    && getsockname(descriptor, raw, &length) == 0
            }
        }
        guard descriptor >= 0, bound else {
            if descriptor >= 0 { close(descriptor) }
            throw SubprocessError("a silent listener on 127.0.0.1: errno \(errno)")
        }
        self.descriptor = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether a client's connection waits in the queue (it connected; nobody will accept it).
    public var hasWaitingConnection: Bool {
        var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&ready, 1, 0) == 1
    }

    deinit { close(descriptor) }
}
