/// A value set's record as the state database stores it (its `data` column, read as `hex(data)`
/// by any SQLite reader), decoded here on its own from the format the store documents: each key and
/// value as its length in bytes (unsigned LEB128), then its UTF-8 bytes. Tests judge what the store
/// wrote with this, not with the store's own reader.
public enum StoredValueRecord {
    /// The keys and values of the record `hex`, in stored order; `nil` when it is not well formed.
    public static func decode(hex: String) -> [(key: String, value: String)]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        func nibble(_ d: UInt8) -> UInt8? {
            switch d {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d - UInt8(ascii: "0")
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        for i in stride(from: 0, to: digits.count, by: 2) {
            guard let high = nibble(digits[i]), let low = nibble(digits[i + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        var at = 0
        func text() -> String? {
            var length = 0
            var shift = 0
            while true {
                guard at < bytes.count, shift <= 28 else { return nil }
                let byte = bytes[at]
                at += 1
                length |= Int(byte & 0x7F) << shift
                if byte < 0x80 { break }
                shift += 7
            }
            guard at + length <= bytes.count else { return nil }
            defer { at += length }
            return String(decoding: bytes[at..<at + length], as: UTF8.self)
        }
        var entries: [(key: String, value: String)] = []
        while at < bytes.count {
            guard let key = text(), let value = text() else { return nil }
            entries.append((key, value))
        }
        return entries
    }
}
