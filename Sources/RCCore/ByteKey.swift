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
        return a.withUTF8 { x in b.withUTF8 { y in ByteCompare.equal(x, y) } }
    }

    /// Whether this text sorts before `other` by UTF-8 bytes (which is also the order of their
    /// Unicode scalar values).
    public func precedesByBytes(_ other: String) -> Bool {
        var a = self
        var b = other
        return a.withUTF8 { x in b.withUTF8 { y in ByteCompare.precedes(x, y) } }
    }

    /// Whether this text starts with the bytes of `prefix` (`hasPrefix` compares characters, so a
    /// combining mark after the prefix's last byte hides the prefix from it).
    public func hasBytePrefix(_ prefix: String) -> Bool {
        guard utf8.count >= prefix.utf8.count else { return false }
        return utf8.starts(with: prefix.utf8)
    }
}

/// Byte comparisons eight bytes at a time: a document's member names are compared at every lookup
/// and sort, and the generic element-by-element walks cost several times as much.
enum ByteCompare {
    static func equal(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>) -> Bool {
        guard x.count == y.count else { return false }
        let a = UnsafeRawBufferPointer(x)
        let b = UnsafeRawBufferPointer(y)
        var i = 0
        while i + 8 <= a.count {
            guard
                a.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                    == b.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            else { return false }
            i += 8
        }
        while i < a.count {
            guard a[i] == b[i] else { return false }
            i += 1
        }
        return true
    }

    /// Whether `x` sorts before `y` by bytes (a proper prefix first).
    static func precedes(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>) -> Bool {
        let a = UnsafeRawBufferPointer(x)
        let b = UnsafeRawBufferPointer(y)
        let common = min(a.count, b.count)
        var i = 0
        while i + 8 <= common {
            let p = a.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            let q = b.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            // As big-endian numbers, the first byte is the most significant on any machine.
            if p != q { return p.bigEndian < q.bigEndian }
            i += 8
        }
        while i < common {
            if a[i] != b[i] { return a[i] < b[i] }
            i += 1
        }
        return a.count < b.count
    }
}
