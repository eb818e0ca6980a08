/// Splits Firebase's realtime invalidation stream into its top-level JSON objects: the body is a
/// sequence of objects, possibly wrapped in an array and split anywhere by the transfer. Braces are
/// counted outside strings; bytes between objects are skipped. Not thread-safe: one per stream.
package struct RealtimeStreamFramer: Sendable {
    /// Bytes of an object not yet complete (garbage beyond this is dropped, never buffered).
    package static let maximumBuffered = 1 << 20

    private var buffer: [UInt8] = []

    package init() {}

    /// Bytes held back waiting for the rest of an object.
    package var bufferedCount: Int { buffer.count }

    /// Appends `bytes` and returns the objects they complete, in stream order.
    package mutating func append(_ bytes: [UInt8]) -> [[UInt8]] {
        buffer.append(contentsOf: bytes)
        var found: [[UInt8]] = []
        var depth = 0
        var inString = false
        var escaped = false
        var start: Int?
        var consumed = 0
        for (index, byte) in buffer.enumerated() {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): if depth > 0 { inString = true }
            case UInt8(ascii: "{"):
                if depth == 0 { start = index }
                depth += 1
            case UInt8(ascii: "}") where depth > 0:
                depth -= 1
                if depth == 0, let begin = start {
                    found.append(Array(buffer[begin...index]))
                    consumed = index + 1
                    start = nil
                }
            default: break
            }
        }
        buffer.removeFirst(start == nil && depth == 0 ? buffer.count : consumed)
        if buffer.count > Self.maximumBuffered { buffer = [] }  // never grow without bound on garbage
        return found
    }
}
