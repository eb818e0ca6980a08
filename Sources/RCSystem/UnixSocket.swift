#if canImport(Glibc)
    import Glibc
#endif

/// The Unix-socket plumbing the daemon and the CLI share (the control socket).
public enum UnixSocket {
    /// The address of the socket file at `path`; paths longer than `sun_path` holds are an error.
    public static func address(_ path: String, for operation: String) throws(SystemError) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw SystemError(
                "\(operation) \(path) (path longer than \(MemoryLayout.size(ofValue: address.sun_path) - 1) bytes)",
                errno: ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        return address
    }

    /// A new stream socket (close-on-exec).
    public static func stream() throws(SystemError) -> FileDescriptor {
        guard
            let fd = FileDescriptor(
                returnedBy: socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0))
        else { throw SystemError("socket") }
        return fd
    }

    /// A stream socket connected to `path`.
    public static func connect(_ path: String) throws(SystemError) -> FileDescriptor {
        var address = try address(path, for: "connect")
        let fd = try stream()
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd.rawValue, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        // The error is taken (errno read) before `fd` closes on the way out.
        guard rc == 0 else { throw SystemError("connect \(path)") }
        return fd
    }

    /// Whether something accepts connections on `path`.
    public static func answers(_ path: String) -> Bool {
        do {
            try connect(path).close()
            return true
        } catch {
            return false
        }
    }

    /// Writes all of `bytes` (send with MSG_NOSIGNAL: a peer gone is EPIPE, never SIGPIPE); `false`
    /// when the peer is gone or the send timed out.
    public static func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        Posix.writeAll(fd, bytes, using: .send(flags: Int32(MSG_NOSIGNAL)))
    }

    /// Waits until `fd` has something to read (data, end of stream or an error) for at most
    /// `duration`; `false` when the time ran out first. Interrupted waits resume with the time left.
    public static func waitReadable(_ fd: Int32, _ duration: Duration) -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + duration
        while true {
            let left = clock.now.duration(to: deadline)
            guard left > .zero else { return false }
            // Rounded up, so that a wake-up just before the deadline does not spin on poll(0).
            let ms = Int32(clamping: (left + .microseconds(999)).milliseconds)
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let rc = poll(&entry, 1, ms)
            if rc > 0 { return true }
            if rc < 0 && errno != EINTR { return true }  // let the read report the error
        }
    }

    /// Sets `SO_RCVTIMEO` or `SO_SNDTIMEO`; zero means wait for ever.
    public static func setTimeout(_ fd: Int32, _ option: Int32, _ duration: Duration) {
        let ms = duration.milliseconds
        var value = timeval(tv_sec: Int(ms / 1_000), tv_usec: Int(ms % 1_000) * 1_000)
        setsockopt(fd, SOL_SOCKET, option, &value, socklen_t(MemoryLayout<timeval>.size))
    }
}
