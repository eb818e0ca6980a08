import RCCore

/// Splits Firebase's realtime invalidation stream into its top-level JSON objects: the body is a
/// sequence of objects, possibly wrapped in an array and split anywhere by the transfer. Braces are
/// counted outside strings; bytes between objects are skipped. Not thread-safe: one per stream.
///
/// Bounded before it holds: only the bytes of the object being read are kept, at most
/// ``maximumBuffered``; an object that grows past that is skipped to its end without being held
/// (its braces still counted, so the next object is framed right) and counted in ``oversized``. An
/// object that never ends (an endless line) costs nothing after the limit, however long it goes on.
package struct RealtimeStreamFramer: Sendable {
    /// The largest message kept, in bytes: an invalidation is under 200.
    package static let maximumBuffered = 64 << 10

    private var buffer: [UInt8] = []
    // The scan's state between chunks: each byte is looked at once, however the transfer splits
    // the stream.
    private var depth = 0
    private var strings = JSONStringTracker()
    /// The object being read went past the limit: its bytes are dropped until it ends.
    private var skipping = false
    /// Objects skipped for their size so far.
    package private(set) var oversized = 0

    package init() {}

    /// Bytes held back waiting for the rest of an object.
    package var bufferedCount: Int { buffer.count }

    /// Appends `bytes` and returns the objects they complete, in stream order.
    package mutating func append(_ bytes: [UInt8]) -> [[UInt8]] {
        var found: [[UInt8]] = []
        // Where the object being read starts in `bytes` (0 when it began in an earlier chunk).
        var start: Int? = depth > 0 ? 0 : nil
        for index in bytes.indices {
            let byte = bytes[index]
            // Strings open only inside an object (depth stays put within one): their braces do not count.
            if depth > 0 && strings.take(byte) { continue }
            switch byte {
            case UInt8(ascii: "{"):
                if depth == 0 { start = index }  // bytes between objects are skipped
                depth += 1
            case UInt8(ascii: "}") where depth > 0:
                depth -= 1
                if depth == 0, let from = start {
                    keep(bytes[from...index])
                    if !skipping { found.append(buffer) }
                    buffer = []
                    skipping = false
                    start = nil
                }
            default: break
            }
        }
        if depth > 0, let from = start { keep(bytes[from...]) }
        return found
    }

    /// Adds part of the object being read, unless that takes it past the limit.
    private mutating func keep(_ part: ArraySlice<UInt8>) {
        guard !skipping else { return }
        guard buffer.count + part.count <= Self.maximumBuffered else {
            skipping = true
            oversized += 1
            buffer = []
            return
        }
        buffer.append(contentsOf: part)
    }
}
