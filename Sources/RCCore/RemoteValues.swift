/// A document's remote values: each key once, in the order of the keys' UTF-8 bytes, which is the
/// order SQLite's BINARY collation gives them (the store keeps a value set in this order, on
/// consecutive rows, and merges two sets in it).
///
/// The parser already puts every object's members in this order, so a document's values arrive in
/// it: made from them, the values are never hashed nor sorted again. Kept in a `[String: String]`, a
/// 3,000-key template's values were hashed once into the dictionary and sorted back into byte order
/// by the store (BENCHMARKS.md, issue 30).
///
/// Two keys are the same key only when they are the same bytes, as for ``ByteKey``.
public struct RemoteValues: Sendable, Equatable, RandomAccessCollection, ExpressibleByDictionaryLiteral {
    public typealias Element = (key: String, value: String)

    @usableFromInline var entries: [Element]

    public init() { entries = [] }

    /// Entries in any order: sorted by their keys' bytes; of entries with the same key, the last wins.
    public init(_ entries: [Element]) {
        self.entries = entries
        guard !isInByteOrder else { return }
        let order = Self.byteOrder(entries.map(\.key))
        var sorted: [Element] = []
        sorted.reserveCapacity(entries.count)
        for index in order {
            // The order is stable: of equal keys, the last one given comes last.
            if let last = sorted.last, last.key.sameBytes(as: entries[index].key) { sorted.removeLast() }
            sorted.append(entries[index])
        }
        self.entries = sorted
    }

    public init(_ values: [String: String]) { self.init(Array(values)) }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements.map { (key: $0.0, value: $0.1) })
    }

    /// Whether each key sorts after the one before it: one comparison a key, all that entries made
    /// from a parsed object's members cost.
    private var isInByteOrder: Bool {
        entries.indices.dropFirst().allSatisfy { entries[$0 - 1].key.precedesByBytes(entries[$0].key) }
    }

    // Inlinable: the store's merge takes every entry in turn.
    @inlinable public var startIndex: Int { entries.startIndex }
    @inlinable public var endIndex: Int { entries.endIndex }
    @inlinable public subscript(position: Int) -> Element { entries[position] }

    /// The value of the key that is the same bytes as `key`: a binary search.
    public subscript(key: String) -> String? {
        var low = 0
        var high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].key.precedesByBytes(key) { low = middle + 1 } else { high = middle }
        }
        return low < entries.count && entries[low].key.sameBytes(as: key) ? entries[low].value : nil
    }

    public var keys: [String] { entries.map(\.key) }

    /// The same keys with the same values, byte for byte.
    public static func == (lhs: RemoteValues, rhs: RemoteValues) -> Bool {
        lhs.entries.elementsEqual(rhs.entries) { $0.key.sameBytes(as: $1.key) && $0.value.sameBytes(as: $1.value) }
    }

    /// The indices of `keys` in the order of their bytes, equal keys in the order given. Each key's
    /// first 16 bytes, as two integers, decide almost every comparison; only keys that share them
    /// are compared whole. Sorting the keys themselves (a `String` comparison retains and releases
    /// both) cost more than storing them.
    static func byteOrder(_ keys: [String]) -> [Int] {
        struct Entry {
            var high: UInt64
            var low: UInt64
            var index: Int
        }
        var entries = keys.enumerated().map { (index, key) -> Entry in
            // Big-endian: the first byte is the most significant. The zero padding sorts a key
            // before every longer key it starts, or ties with one that goes on with NUL, and a tie
            // is decided by the whole keys. Over the bytes in place: through the generic
            // `utf8.prefix(16)`, this took longer than the sort.
            var prefix = (UInt64(0), UInt64(0))
            var key = key
            key.withUTF8 { bytes in
                withUnsafeMutableBytes(of: &prefix) {
                    $0.copyMemory(from: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes.prefix(16))))
                }
            }
            return Entry(high: prefix.0.bigEndian, low: prefix.1.bigEndian, index: index)
        }
        entries.sort { a, b in
            if a.high != b.high { return a.high < b.high }
            if a.low != b.low { return a.low < b.low }
            if keys[a.index].precedesByBytes(keys[b.index]) { return true }
            // Equal keys keep the order they were given in.
            return keys[a.index].sameBytes(as: keys[b.index]) && a.index < b.index
        }
        return entries.map(\.index)
    }
}
