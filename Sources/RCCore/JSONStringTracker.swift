/// Tells, byte by byte, whether a byte of JSON text belongs to a string (its quotes included):
/// for code that skims JSON without parsing it (framing a stream into objects, dropping the white
/// space between tokens). It knows only strings and their escapes; its state carries over between
/// chunks, so the text may arrive split anywhere.
public struct JSONStringTracker: Sendable {
    /// The last byte taken opened a string that has not closed yet.
    public private(set) var inString = false
    private var escaped = false

    public init() {}

    /// Takes the next byte; returns true when it is part of a string: an opening or closing quote
    /// or anything between them.
    public mutating func take(_ byte: UInt8) -> Bool {
        if inString {
            if escaped {
                escaped = false
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
            } else if byte == UInt8(ascii: "\"") {
                inString = false
            }
            return true
        }
        if byte == UInt8(ascii: "\"") {
            inString = true
            return true
        }
        return false
    }
}
