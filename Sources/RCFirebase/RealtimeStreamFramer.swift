/// Splits Firebase's realtime invalidation stream into its top-level JSON objects: the body is a
/// sequence of objects, possibly wrapped in an array and split anywhere by the transfer. Braces are
/// counted outside strings; bytes between objects are skipped. Not thread-safe: one per stream.
package struct RealtimeStreamFramer: Sendable {
    /// Bytes of an object not yet complete (garbage beyond this is dropped, never buffered).
    package static let maximumBuffered = 1 << 20

    private var buffer: [UInt8] = []
    // Where the scan stopped in `buffer`, and its state there: each byte is looked at once, however
    // the transfer splits the stream (rescanning the buffer on every chunk cost the square of an
    // object's size when it arrived a few bytes at a time).
    private var scanned = 0
    private var depth = 0
    private var inString = false
    private var escaped = false

    package init() {}

    /// Bytes held back waiting for the rest of an object.
    package var bufferedCount: Int { buffer.count }

    /// Appends `bytes` and returns the objects they complete, in stream order.
    package mutating func append(_ bytes: [UInt8]) -> [[UInt8]] {
        buffer.append(contentsOf: bytes)
        var found: [[UInt8]] = []
        // Objects end before `consumed`; the one being read, if any, starts at 0 after each removal.
        var consumed = 0
        while scanned < buffer.count {
            let byte = buffer[scanned]
            scanned += 1
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
            case UInt8(ascii: "\"") where depth > 0: inString = true
            case UInt8(ascii: "{"):
                if depth == 0 { consumed = scanned - 1 }  // bytes between objects are skipped
                depth += 1
            case UInt8(ascii: "}") where depth > 0:
                depth -= 1
                if depth == 0 {
                    found.append(Array(buffer[consumed..<scanned]))
                    consumed = scanned
                }
            default:
                if depth == 0 { consumed = scanned }
            }
        }
        buffer.removeFirst(consumed)
        scanned -= consumed
        if buffer.count > Self.maximumBuffered {  // never grow without bound on garbage
            buffer = []
            scanned = 0
            depth = 0
            inString = false
            escaped = false
        }
        return found
    }
}
