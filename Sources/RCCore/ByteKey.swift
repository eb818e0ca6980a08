/// Text compared, ordered and hashed by its UTF-8 bytes, for every collection keyed by text the
/// program does not control: member names, device ids, topics, values.
///
/// Swift's `String` compares and hashes by canonical equivalence: it normalizes both sides first.
/// That has two costs for untrusted text. Normalizing a long run of combining marks reorders them,
/// at a cost that grows with the square of the run: a 100 KB key cost seconds per comparison. And
/// two different byte sequences can be one `String` (U+212A KELVIN SIGN equals `K`), so a
/// dictionary keyed by `String` lets one sender's text stand in for another's. A `ByteKey` is
/// equal to another only when the bytes are, as SQLite's BINARY collation, shells, environment
/// variables and MQTT brokers see them; all of its operations are linear in the length.
public struct ByteKey: Hashable, Comparable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let text: String

    public init(_ text: String) { self.text = text }
    public init(stringLiteral text: String) { self.text = text }

    public var description: String { text }

    public static func == (lhs: ByteKey, rhs: ByteKey) -> Bool { lhs.text.sameBytes(as: rhs.text) }

    public static func < (lhs: ByteKey, rhs: ByteKey) -> Bool { lhs.text.precedesByBytes(rhs.text) }

    public func hash(into hasher: inout Hasher) {
        var text = text
        text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        hasher.combine(text.utf8.count)
    }
}

extension String {
    /// Whether the two texts are the same bytes (not only canonically equivalent, as `==` says).
    public func sameBytes(as other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        var a = self
        var b = other
        return a.withUTF8 { x in b.withUTF8 { y in x.elementsEqual(y) } }
    }

    /// Whether this text sorts before `other` by UTF-8 bytes (which is also the order of their
    /// Unicode scalar values).
    public func precedesByBytes(_ other: String) -> Bool {
        var a = self
        var b = other
        return a.withUTF8 { x in b.withUTF8 { y in x.lexicographicallyPrecedes(y) } }
    }

    /// Whether this text starts with the bytes of `prefix` (`hasPrefix` compares characters, so a
    /// combining mark after the prefix's last byte hides the prefix from it).
    public func hasBytePrefix(_ prefix: String) -> Bool {
        guard utf8.count >= prefix.utf8.count else { return false }
        return utf8.starts(with: prefix.utf8)
    }
}
