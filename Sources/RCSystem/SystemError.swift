#if canImport(Glibc)
    import Glibc
#endif

/// An operating-system error with the call that failed (`open /x: No such file or directory`),
/// or with a reason of the program's own (`open /x: is a FIFO, not a regular file`).
public struct SystemError: Error, CustomStringConvertible, Sendable {
    public let operation: String
    public let errno: Int32
    /// Replaces the system's text for `errno` when set.
    public let reason: String?

    public init(_ operation: String, errno: Int32 = Glibc.errno) {
        self.operation = operation
        self.errno = errno
        reason = nil
    }

    public init(_ operation: String, reason: String, errno: Int32) {
        self.operation = operation
        self.errno = errno
        self.reason = reason
    }

    public var description: String { "\(operation): \(reason ?? String(cString: strerror(errno)))" }
}
