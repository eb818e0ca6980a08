import Glibc
import RCCore

/// A value set stored as one record: the `data` column of its row in `value_sets`, each key and
/// value in key order (SQLite's BINARY collation: the bytes) as its length in bytes (unsigned
/// LEB128) and its UTF-8 bytes, with the number of keys in the row's `keys` column.
///
/// One record a set, not a row a key: storing a 3,000-key set as rows was two b-tree inserts a key
/// (the table and its `(set_id, key)` index) and deleting it two deletes a key, 15% and 9.5% of a
/// 3,000-parameter fetch's CPU; as one record the insert and the delete are each a few overflow
/// pages (`bench/set-layouts.py`, BENCHMARKS.md, issue 30).
enum ValueRecord {
    /// The most bytes ``encode(_:chunk:to:)`` hands over at once, by default.
    static let chunk = 64 << 10

    /// The record's size in bytes for `values`.
    static func size(of values: RemoteValues) -> Int {
        var size = 0
        for (key, value) in values {
            let k = key.utf8.count
            let v = value.utf8.count
            size += lengthSize(k) + k + lengthSize(v) + v
        }
        return size
    }

    /// Writes the record of `values` through `write`, in chunks of at most `chunk` bytes, each with
    /// its offset in the record: a big document's record is never whole in memory. Texts longer
    /// than a chunk go through it in pieces.
    static func encode(
        _ values: RemoteValues, chunk: Int = Self.chunk,
        to write: (UnsafeRawBufferPointer, Int) throws(SQLiteError) -> Void
    ) throws(SQLiteError) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(chunk, 16), alignment: 1)
        defer { buffer.deallocate() }
        var used = 0
        var written = 0
        func flush() throws(SQLiteError) {
            guard used > 0 else { return }
            try write(UnsafeRawBufferPointer(rebasing: buffer[0..<used]), written)
            written += used
            used = 0
        }
        func append(_ text: String) throws(SQLiteError) {
            try withBytes(of: text) { (bytes) throws(SQLiteError) in
                if buffer.count - used < 10 { try flush() }  // room for any length
                var rest = bytes.count
                repeat {
                    let low = UInt8(rest & 0x7F)
                    rest >>= 7
                    buffer[used] = rest == 0 ? low : low | 0x80
                    used += 1
                } while rest != 0
                var from = 0
                while from < bytes.count {
                    if used == buffer.count { try flush() }
                    let n = min(buffer.count - used, bytes.count - from)
                    UnsafeMutableRawBufferPointer(rebasing: buffer[used..<used + n])
                        .copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[from..<from + n]))
                    used += n
                    from += n
                }
            }
        }
        for (key, value) in values {
            try append(key)
            try append(value)
        }
        try flush()
    }

    /// Writes the record of `values` into value set `set`'s row on `db`, made to its size already
    /// (`data = zeroblob(``size(of:)``)`).
    static func write(_ values: RemoteValues, toSet set: Int64, on db: Database) throws(SQLiteError) {
        try db.writeBlob(table: "value_sets", column: "data", row: set) { (write) throws(SQLiteError) in
            try encode(values, to: write)
        }
    }

    /// `body`'s result for `text`'s UTF-8 bytes, read in place (`withUTF8`, whose closure cannot
    /// throw a typed error).
    static func withBytes<T>(of text: String, _ body: (UnsafeRawBufferPointer) throws(SQLiteError) -> T)
        throws(SQLiteError) -> T
    {
        var text = text
        let result = text.withUTF8 { bytes in
            Result { () throws(SQLiteError) in try body(UnsafeRawBufferPointer(bytes)) }
        }
        return try result.get()
    }

    /// Bytes of the length prefix for a text of `count` bytes.
    static func lengthSize(_ count: Int) -> Int {
        var size = 1
        var rest = count >> 7
        while rest != 0 {
            size += 1
            rest >>= 7
        }
        return size
    }

    /// One key and its value in a record, read in place: valid while the record's bytes are.
    struct Entry {
        let key: UnsafeRawBufferPointer
        let value: UnsafeRawBufferPointer

        var keyText: String { String(decoding: key, as: UTF8.self) }
        var valueText: String { String(decoding: value, as: UTF8.self) }
    }

    /// Walks a record's entries in order. A record whose lengths run past its end, whose keys are
    /// out of order, or that holds another number of keys than its row says, is damage:
    /// SQLITE_CORRUPT, naming the set and the byte, as SQLite names damage it finds itself.
    struct Reader {
        private let bytes: UnsafeRawBufferPointer
        private let keys: Int
        private let set: Int64
        private var offset = 0
        private var read = 0
        private var previous: UnsafeRawBufferPointer?

        /// A reader of no entries.
        static var empty: Reader { Reader(UnsafeRawBufferPointer(start: nil, count: 0), keys: 0, set: 0) }

        init(_ bytes: UnsafeRawBufferPointer, keys: Int, set: Int64) {
            self.bytes = bytes
            self.keys = keys
            self.set = set
        }

        /// The next entry; `nil` after the last. Each key must sort after the one before it (every
        /// walk, the merge's and the lookups', relies on the order): one comparison an entry.
        mutating func next() throws(SQLiteError) -> Entry? {
            guard offset < bytes.count else {
                guard read == keys else { throw damage("it ends after \(read) of its \(keys) keys") }
                return nil
            }
            let start = offset
            let key = try text()
            if let previous, Self.order(previous, key) >= 0 {
                throw damage("key \(read + 1) does not sort after the key before it", at: start)
            }
            let value = try text()
            read += 1
            previous = key
            return Entry(key: key, value: value)
        }

        /// The value of `key` among the entries left, read in place: a walk that stops at the
        /// first key past it.
        mutating func value(of key: String) throws(SQLiteError) -> String? {
            try ValueRecord.withBytes(of: key) { (target) throws(SQLiteError) -> String? in
                while let entry = try next() {
                    let order = Self.order(entry.key, target)
                    if order == 0 { return entry.valueText }
                    if order > 0 { return nil }
                }
                return nil
            }
        }

        /// The text at `offset`: its length, then its bytes.
        private mutating func text() throws(SQLiteError) -> UnsafeRawBufferPointer {
            let start = offset
            var length = 0
            var shift = 0
            while true {
                guard offset < bytes.count else { throw damage("a length runs past its end", at: start) }
                let byte = bytes[offset]
                offset += 1
                guard shift < 35 else { throw damage("a length is too long", at: start) }
                length |= Int(byte & 0x7F) << shift
                if byte & 0x80 == 0 { break }
                shift += 7
            }
            guard length <= bytes.count - offset else {
                throw damage("a text of \(length) bytes runs past its end", at: start)
            }
            defer { offset += length }
            return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + length])
        }

        private func damage(_ problem: String, at byte: Int? = nil) -> SQLiteError {
            let place = byte.map { " at byte \($0)" } ?? ""
            return SQLiteError(
                code: 11 /* SQLITE_CORRUPT */,
                message: "value set \(set): its record (\(bytes.count) bytes) is damaged\(place): \(problem)", sql: nil)
        }

        /// How `a` orders against `b` as SQLite's BINARY collation orders texts: the bytes, then
        /// the length. Negative, zero or positive.
        static func order(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
            let common = min(a.count, b.count)
            if common > 0, let x = a.baseAddress, let y = b.baseAddress {
                let order = memcmp(x, y, common)
                if order != 0 { return Int(order) }
            }
            return a.count - b.count
        }
    }
}
