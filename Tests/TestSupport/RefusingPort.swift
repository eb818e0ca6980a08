import Glibc

/// A loopback TCP port that refuses every connection for as long as this object lives (keep it
/// alive past the last connection: `withExtendedLifetime`): bound by a socket of its own that
/// never listens. A port only picked free (``Mosquitto/freePort()``) is
/// free for anyone: a server another test started at the same time took one, and a connection
/// that had to be refused got an HTTP 200 instead.
public final class RefusingPort: Sendable {
    public let port: Int
    private let fd: Int32

    public init() throws {
        guard let (fd, port) = boundLoopbackSocket() else { throw TestFailure("no loopback port to hold") }
        self.fd = fd
        self.port = port
    }

    deinit { close(fd) }
}
