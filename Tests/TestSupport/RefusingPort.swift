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
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard fd >= 0, bound else {
            close(fd)
            throw TestFailure("no loopback port to hold")
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(fd) }
}
