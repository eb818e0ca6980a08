/// Splits a byte stream into `\n`-ended lines, for both ends of the control socket.
///
/// Each byte is searched for a newline once, and a line is taken without moving the bytes after it
/// (they are moved once, when more arrive), so a line that arrives a byte at a time, or thousands of
/// lines in one read, cost time linear in their size. A line longer than `maximumLength` bytes
/// (before its newline) is refused: whoever sends it cannot make the reader hold more.
public struct LineBuffer: Sendable {
    public let maximumLength: Int
    private var bytes: [UInt8] = []
    /// Where the line being read starts in `bytes`.
    private var start = 0
    /// How many bytes from `start` hold no newline.
    private var scanned = 0

    public init(maximumLength: Int) {
        self.maximumLength = maximumLength
    }

    public enum Next: Equatable, Sendable {
        case line([UInt8])
        /// No whole line yet: append more.
        case needMore
        /// The line being read is already longer than `maximumLength`.
        case tooLong
    }

    /// Bytes of a line whose newline has not arrived yet.
    public var hasPartialLine: Bool { start < bytes.count }

    public mutating func append(_ more: some Collection<UInt8>) {
        // Lines taken since the last append are dropped here, once.
        if start > 0 {
            bytes.removeFirst(start)
            start = 0
        }
        bytes.append(contentsOf: more)
    }

    /// The next whole line, without its `\n`.
    public mutating func next() -> Next {
        if let newline = bytes[(start + scanned)...].firstIndex(of: UInt8(ascii: "\n")),
            newline - start <= maximumLength
        {
            let line = Array(bytes[start..<newline])
            start = newline + 1
            scanned = 0
            return .line(line)
        }
        scanned = bytes.count - start
        return scanned > maximumLength ? .tooLong : .needMore
    }
}
