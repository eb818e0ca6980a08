import RCCore

/// The reader file's empty image for the schema a new state database of this build has, built in
/// advance: a new daemon made it from that schema at each start, a statement per table (about a
/// tenth of a new daemon's instructions, paid by each of a fleet's agents at once). Only its bytes
/// that are not zero are kept (`ReaderImage+Data.swift`, written by `ReaderImageTests` from the
/// image a new state database's schema builds: see there to write it again after a schema change).
enum ReaderImage {
    /// The image for the reader schema `schema` (``StateStore/readerSchema(of:)``), when it is the
    /// one built in advance; `nil` for any other schema (a database made by another build), whose
    /// image is then built as before.
    static func embedded(for schema: [String]) -> [UInt8]? {
        guard key(schema) == schemaKey else { return nil }
        return decode(runs)
    }

    /// What identifies a reader schema: its script's FNV-1a hash (the schema comes from the daemon's
    /// own database, so the hash needs to tell this build's schema from another build's, not resist
    /// a forger: one who can write the state database has the device already) and length.
    static func key(_ schema: [String]) -> String {
        let script = schema.joined(separator: ";\n")
        return "\(script.utf8.count):" + FNV1a.tag(script.utf8)
    }

    /// The bytes `runs` describes: a line "size N", then one line per run of bytes that are not all
    /// zero, "offset hex-digits"; every other byte is zero. `nil` if it is not that shape.
    static func decode(_ runs: String) -> [UInt8]? {
        let lines = runs.utf8.split(separator: UInt8(ascii: "\n"))
        guard let first = lines.first, first.starts(with: "size ".utf8),
            let size = Int(String(decoding: first.dropFirst(5), as: UTF8.self)), size >= 0
        else { return nil }
        var bytes = [UInt8](repeating: 0, count: size)
        for line in lines.dropFirst() {
            guard let space = line.firstIndex(of: UInt8(ascii: " ")),
                let offset = Int(String(decoding: line[..<space], as: UTF8.self)), offset >= 0
            else { return nil }
            let digits = line[line.index(after: space)...]
            guard digits.count % 2 == 0, offset <= size - digits.count / 2 else { return nil }
            var at = offset
            var index = digits.startIndex
            while index < digits.endIndex {
                let next = digits.index(after: index)
                guard let high = nibble(digits[index]), let low = nibble(digits[next]) else { return nil }
                bytes[at] = high << 4 | low
                at += 1
                index = digits.index(after: next)
            }
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

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}
