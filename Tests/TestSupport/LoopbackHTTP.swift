#if canImport(Glibc)
    import Glibc
#endif

/// Raw HTTP over a loopback TCP connection: what a scraper or a hostile client sends, byte for
/// byte, and what comes back. No HTTP library in between, so a test can send garbage, hold a
/// connection open or send half a request.
public enum LoopbackHTTP {
    /// A connected socket to 127.0.0.1:`port` (receives time out after `timeout` seconds), or -1.
    public static func connect(port: Int, timeout: Int = 10) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return -1 }
        var limit = timeval(tv_sec: timeout, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(fd)
            return -1
        }
        return fd
    }

    /// Writes all of `bytes`; whether it could.
    @discardableResult
    public static func send(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    /// Reads until the peer closes (or the receive timeout passes): the whole response.
    public static func readAll(_ fd: Int32) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            out += buffer[0..<n]
        }
        return out
    }

    /// Sends `request` as it is on a new connection and returns the response (empty when the
    /// connection could not be made or the server closed it without a word).
    public static func exchange(port: Int, _ request: String) -> String {
        let fd = connect(port: port)
        guard fd >= 0 else { return "" }
        defer { close(fd) }
        guard send(fd, Array(request.utf8)) else { return "" }
        return String(decoding: readAll(fd), as: UTF8.self)
    }

    /// `GET path` over HTTP/1.0 (one request, no chunked body): the response, status line first.
    public static func get(port: Int, _ path: String) -> String {
        exchange(port: port, "GET \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
    }

    /// The body of a response (after the blank line).
    public static func body(_ response: String) -> String {
        guard let range = response.range(of: "\r\n\r\n") else { return "" }
        return String(response[range.upperBound...])
    }
}
