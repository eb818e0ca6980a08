#if canImport(Glibc)
    import Glibc
#endif

/// An open file descriptor with exactly one owner, closed when that owner lets go of it.
///
/// Noncopyable, so the compiler rejects a second owner, a use after ``close()`` and a forgotten
/// close on an early return or a throw: the value closes in `deinit` wherever it goes out of scope
/// unconsumed. ``release()`` hands the number over to an owner that closes it in its own way (a
/// dispatch source's cancel handler, a spawned process's file actions).
///
/// The raw number (``rawValue``) is for the system calls made while the owner holds it; keep it no
/// longer than the owner lives, since the kernel reuses the number once the descriptor is closed.
public struct FileDescriptor: ~Copyable, Sendable {
    public let rawValue: Int32

    /// Takes ownership of `rawValue` (an open descriptor, closed by this value from now on).
    public init(_ rawValue: Int32) {
        precondition(rawValue >= 0, "FileDescriptor needs an open descriptor, got \(rawValue)")
        self.rawValue = rawValue
    }

    /// Takes ownership of what a call such as `open` or `socket` returned, or `nil` when it
    /// returned -1 (`errno` is then still the call's).
    public init?(returnedBy rawValue: Int32) {
        guard rawValue >= 0 else { return nil }
        self.rawValue = rawValue
    }

    deinit { Glibc.close(rawValue) }

    /// Closes the descriptor now (the same as letting the value go, said where it matters).
    ///
    /// close(2) is never retried on EINTR: on Linux the descriptor is freed whatever it returns, and
    /// a retry could close a number another thread has just been given.
    public consuming func close() {
        let fd = rawValue
        discard self
        Glibc.close(fd)
    }

    /// Gives up ownership without closing: the caller now closes the number it is handed.
    public consuming func release() -> Int32 {
        let fd = rawValue
        discard self
        return fd
    }
}

/// System calls wrapped once, the way swift-nio's `Posix` does it: retried on EINTR where a retry is
/// the answer, and the loops every caller needs (write everything) written once.
public enum Posix {
    /// Calls `body` again while it fails with EINTR (a signal arrived before the call did anything)
    /// and returns its result. For calls that return -1 and set `errno` on failure (`open`, `read`,
    /// `send`, `waitpid`, `sem_wait`...); never for `close`, which must not be retried.
    @inlinable
    public static func retrying<Result: BinaryInteger>(_ body: () -> Result) -> Result {
        while true {
            let result = body()
            if result >= 0 || errno != EINTR { return result }
        }
    }

    /// How ``writeAll(_:_:sendFlags:whenBlocked:)`` writes: `write(2)`, or `send(2)` with flags.
    public enum Call: Sendable {
        case write
        /// `send(2)` with these flags, for sockets (`MSG_NOSIGNAL`: a peer gone is EPIPE, not SIGPIPE).
        case send(flags: Int32)
    }

    /// Writes all of `bytes` to `fd`, resuming after EINTR and after short writes. `false` when a
    /// write fails (`errno` says why; EPIPE: the reader went away) or writes nothing.
    ///
    /// On a non-blocking descriptor, a write that would block (EAGAIN) calls `whenBlocked`, which
    /// waits until `fd` may take more and returns `true`, or returns `false` to give up (a deadline);
    /// the default gives up at once.
    public static func writeAll(
        _ fd: Int32, _ bytes: UnsafeRawBufferPointer, using call: Call = .write, whenBlocked: () -> Bool = { false }
    ) -> Bool {
        guard var next = bytes.baseAddress else { return true }
        var left = bytes.count
        while left > 0 {
            let n =
                switch call {
                case .write: Glibc.write(fd, next, left)
                case let .send(flags): Glibc.send(fd, next, left, flags)
                }
            if n > 0 {
                next += n
                left -= n
                continue
            }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && whenBlocked() { continue }
            return false
        }
        return true
    }

    /// ``writeAll(_:_:using:whenBlocked:)`` for an array of bytes.
    public static func writeAll(
        _ fd: Int32, _ bytes: [UInt8], using call: Call = .write, whenBlocked: () -> Bool = { false }
    ) -> Bool {
        bytes.withUnsafeBytes { writeAll(fd, $0, using: call, whenBlocked: whenBlocked) }
    }

    /// ``writeAll(_:_:using:whenBlocked:)`` for text, as UTF-8.
    public static func writeAll(_ fd: Int32, _ text: String, using call: Call = .write) -> Bool {
        var text = text
        return text.withUTF8 { writeAll(fd, UnsafeRawBufferPointer($0), using: call) }
    }
}
