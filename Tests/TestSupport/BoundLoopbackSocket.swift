import Glibc

/// A TCP socket bound to a port of 127.0.0.1 the kernel chose, listening with `backlog` when one
/// is given: its descriptor and port, or nil (`errno` says why). What ``SilentListener`` and
/// ``RefusingPort`` hold.
func boundLoopbackSocket(listening backlog: Int32? = nil) -> (descriptor: Int32, port: Int)? {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { return nil }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
            bind(descriptor, raw, length) == 0 && (backlog.map { listen(descriptor, $0) == 0 } ?? true)
                && getsockname(descriptor, raw, &length) == 0
        }
    }
    guard bound else {
        let failure = errno
        close(descriptor)
        errno = failure
        return nil
    }
    return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
}
