import RCCore

/// Empty databases built in advance, as bytes: a new state database (``Schema/fresh``) and the reader
/// file's empty image for its schema (``StateStore/readerSchema()``). A new daemon made both at
/// its start, a `CREATE` statement at a time (8.8 M of the 44 M instructions from exec to its first
/// report, paid by each of a fleet's agents at once), and every daemon made the second at each
/// start. Only the bytes that are not zero are kept (`DatabaseImage+Data.swift`, written by
/// `DatabaseImageTests` from the images the schema builds: see there to write it again after a
/// schema change). A script that is not the one an image was built from (the schema of a database
/// another build made) gets an image built from it, in memory (``build(_:)``).
enum DatabaseImage {
    /// The image of a new state database: ``Schema/fresh`` and this build's `user_version`.
    static func fresh() throws(SQLiteError) -> [UInt8] {
        try image(Schema.fresh, key: freshKey, runs: freshRuns)
    }

    /// The reader file's empty image for the reader schema `schema`.
    static func reader(_ schema: [String]) throws(SQLiteError) -> [UInt8] {
        try image(schema.joined(separator: ";\n"), key: readerKey, runs: readerRuns)
    }

    /// The image `runs` when `script` is the one it was built from (`key`), else one built now.
    static func image(_ script: String, key: String, runs: String) throws(SQLiteError) -> [UInt8] {
        if Self.key(script) == key, let image = decode(runs) { return image }
        return try build(script)
    }

    /// An empty database made by `script`, with this build's `user_version`, as bytes.
    static func build(_ script: String) throws(SQLiteError) -> [UInt8] {
        let image = try Database(image: [])
        try image.execute("BEGIN")
        try image.execute(script)
        try image.execute("PRAGMA user_version = \(Schema.currentVersion); COMMIT")
        return try image.withFileBytes { Array($0) }
    }

    /// What identifies the script an image was built from, with the `user_version` it sets: their
    /// FNV-1a hash and length. The scripts are this build's own, or come from the daemon's own
    /// database: the key tells this build's schema from another build's, it need not resist a
    /// forger (one who can write the state database has the device already).
    static func key(_ script: String) -> String {
        let text = script + "\nuser_version \(Schema.currentVersion)"
        return "\(text.utf8.count):" + FNV1a.tag(text.utf8)
    }

    /// The bytes `runs` describes: a line "size N", then one line per run of bytes that are not all
    /// zero, "offset hex-digits"; every other byte is zero. `nil` if it is not that shape.
    static func decode(_ runs: String) -> [UInt8]? {
        var text = runs
        // One pass over the text's own bytes (a string's UTF-8 view, indexed, cost 80 instructions a
        // byte: as much as the statements the image saves).
        return text.withUTF8 { decode($0) }
    }

    private static func decode(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        var at = 0
        /// The decimal number at `at`, up to `terminator` (consumed).
        func number(until terminator: UInt8) -> Int? {
            var value = 0
            let start = at
            while at < text.count, text[at] != terminator {
                guard text[at] >= UInt8(ascii: "0"), text[at] <= UInt8(ascii: "9"), at - start < 12 else { return nil }
                value = value * 10 + Int(text[at] - UInt8(ascii: "0"))
                at += 1
            }
            guard at > start, at < text.count else { return nil }
            at += 1
            return value
        }
        let size = Array("size ".utf8)
        guard text.count > size.count, text.starts(with: size) else { return nil }
        at = size.count
        guard let count = number(until: UInt8(ascii: "\n")) else { return nil }
        var bytes = [UInt8](repeating: 0, count: count)
        while at < text.count {
            guard var offset = number(until: UInt8(ascii: " ")) else { return nil }
            while at < text.count, text[at] != UInt8(ascii: "\n") {
                guard at + 1 < text.count, offset < count, let high = text[at].hexDigitValue,
                    let low = text[at + 1].hexDigitValue
                else { return nil }
                bytes[offset] = high << 4 | low
                offset += 1
                at += 2
            }
            at += 1
        }
        return bytes
    }

    /// The runs of `bytes` in the form ``decode(_:)`` reads: runs of zeros shorter than 16 bytes
    /// stay inside a run (a line costs more than they do), and a long run takes several lines.
    static func encode(_ bytes: [UInt8]) -> String {
        var text = "size \(bytes.count)\n"
        var index = 0
        while index < bytes.count {
            guard bytes[index] != 0 else {
                index += 1
                continue
            }
            var end = index
            var zeros = 0
            while end < bytes.count && zeros < 16 {
                zeros = bytes[end] == 0 ? zeros + 1 : 0
                end += 1
            }
            end -= zeros
            // At most 48 bytes a line: a line of source stays short.
            for start in stride(from: index, to: end, by: 48) {
                let digits = bytes[start..<min(end, start + 48)].map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }
                text += "\(start) " + digits.joined() + "\n"
            }
            index = end
        }
        return text
    }
}
