import Glibc

/// A TCP socket on 127.0.0.1 that listens and never accepts: the kernel completes a client's
/// connection, the client sends its request, and nothing ever answers (a hung server or broker).
public final class SilentListener {
    private let descriptor: Int32
    /// The port it listens on (chosen by the kernel).
    public let port: Int

    public init() throws {
        guard let (descriptor, port) = boundLoopbackSocket(listening: 8) else {
            throw SubprocessError("a silent listener on 127.0.0.1: errno \(errno)")
        }
        self.descriptor = descriptor
        self.port = port
    }

    /// Whether a client's connection waits in the queue (it connected; nobody will accept it).
    public var hasWaitingConnection: Bool {
        var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&ready, 1, 0) == 1
    }

    deinit { close(descriptor) }
}
