/// JSON strings: escapes, surrogate pairs, UTF-8 validation and the bound on combining marks.
extension JSONReader.Scanner {
    /// A string: escapes decoded (surrogates paired), control characters refused, UTF-8 validated.
    mutating func string() throws(JSONParseError) -> String {
        let start = i
        i += 1
        let contentStart = i
        // Most strings are plain ASCII, with no escape: a tight scan to their closing quote, and the
        // bytes are taken from the input as they are. Anything else goes on below from where it stopped.
        let base = bytes.baseAddress!
        let end = bytes.count
        var j = i
        // Eight bytes at a time while none of them ends the scan (``isPlainASCII(_:)``), then one by one.
        while j + 8 <= end, Self.isPlainASCII(UnsafeRawPointer(base + j).loadUnaligned(as: UInt64.self)) { j += 8 }
        while j < end {
            let c = base[j]
            guard c >= 0x20 && c < 0x80 && c != UInt8(ascii: "\"") && c != UInt8(ascii: "\\") else { break }
            j += 1
        }
        i = j
        if i < end && base[i] == UInt8(ascii: "\"") {
            i += 1
            lastStringIsASCII = true
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[contentStart..<i - 1]), as: UTF8.self)
        }
        var escaped = false
        var ascii = true
        defer { lastStringIsASCII = ascii }
        while true {
            guard i < bytes.count else { throw fail("unterminated string", at: start) }
            let c = bytes[i]
            switch c {
            case UInt8(ascii: "\""):
                let text =
                    escaped
                    ? String(decoding: scratch, as: UTF8.self)
                    : String(decoding: UnsafeBufferPointer(rebasing: bytes[contentStart..<i]), as: UTF8.self)
                if !ascii { try checkStreamSafe(text, at: start) }
                i += 1
                return text
            case UInt8(ascii: "\\"):
                if !escaped {
                    escaped = true
                    scratch.removeAll(keepingCapacity: true)
                    scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[contentStart..<i]))
                }
                try escape()
                if scratch.last.map({ $0 >= 0x80 }) ?? false { ascii = false }
            case 0..<0x20:
                throw fail("control character \(describe(c)) in a string")
            case 0..<0x80:
                if escaped { scratch.append(c) }
                i += 1
            default:
                ascii = false
                let sequenceStart = i
                try utf8Sequence()
                if escaped { scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[sequenceStart..<i])) }
            }
        }
    }

    /// Whether none of the eight bytes in `word` is a quote, a backslash, a control character or a
    /// byte over 0x7F. Each test finds every such byte (it may also flag a byte after one, which
    /// only ends the fast scan early): `x - 0x01 & ~x & 0x80` per byte is nonzero for a zero byte,
    /// so for a byte equal to `c` after `x ^ c`, and `x - 0x20 & ~x & 0x80` for one under 0x20
    /// once no byte has its high bit set.
    @inline(__always)
    static func isPlainASCII(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highBits: UInt64 = 0x8080_8080_8080_8080
        func hasByte(below n: UInt64, in x: UInt64) -> Bool { (x &- ones &* n) & ~x & highBits != 0 }
        return word & highBits == 0 && !hasByte(below: 0x20, in: word)
            && !hasByte(below: 1, in: word ^ (ones &* 0x22)) && !hasByte(below: 1, in: word ^ (ones &* 0x5C))
    }

    /// Refuses `text` (the string that starts at byte `start`) when it holds more than
    /// ``maximumNonStarters`` combining marks in a row. The three Tibetan vowels of combining
    /// class 0 whose decompositions are combining marks (U+0F73, U+0F75, U+0F81) count as marks.
    func checkStreamSafe(_ text: String, at start: Int) throws(JSONParseError) {
        var run = 0
        for scalar in text.unicodeScalars {
            let value = scalar.value
            guard value >= 0x300 else {
                run = 0
                continue
            }
            let isMark =
                scalar.properties.canonicalCombiningClass != .notReordered
                || value == 0x0F73 || value == 0x0F75 || value == 0x0F81
            guard isMark else {
                run = 0
                continue
            }
            run += 1
            if run > JSONReader.maximumNonStarters {
                throw fail(
                    "string with more than \(JSONReader.maximumNonStarters) combining marks in a row",
                    at: start)
            }
        }
    }

    /// One escape sequence, its backslash at `i`; appends what it stands for to `scratch`.
    mutating func escape() throws(JSONParseError) {
        let backslash = i
        i += 1
        let simple: UInt8? =
            switch current {
            case UInt8(ascii: "\"")?: 0x22
            case UInt8(ascii: "\\")?: 0x5C
            case UInt8(ascii: "/")?: 0x2F
            case UInt8(ascii: "b")?: 0x08
            case UInt8(ascii: "f")?: 0x0C
            case UInt8(ascii: "n")?: 0x0A
            case UInt8(ascii: "r")?: 0x0D
            case UInt8(ascii: "t")?: 0x09
            default: nil
            }
        if let simple {
            scratch.append(simple)
            i += 1
            return
        }
        guard current == UInt8(ascii: "u") else {
            throw fail("invalid escape \\\(describe(current))", at: backslash)
        }
        var scalar = try hex4()
        if (0xD800...0xDBFF).contains(scalar) {
            guard current == UInt8(ascii: "\\"), i + 1 < bytes.count, bytes[i + 1] == UInt8(ascii: "u") else {
                throw fail("invalid \\u escape: unpaired surrogate", at: backslash)
            }
            i += 1
            let low = try hex4()
            guard (0xDC00...0xDFFF).contains(low) else {
                throw fail("invalid \\u escape: unpaired surrogate", at: backslash)
            }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(scalar) {
            throw fail("invalid \\u escape: unpaired surrogate", at: backslash)
        }
        // Not a surrogate, or a pair put together: always a valid scalar.
        scratch.append(contentsOf: Unicode.UTF8.encode(Unicode.Scalar(scalar)!)!)
    }

    /// `uXXXX` after the backslash: returns the code unit.
    mutating func hex4() throws(JSONParseError) -> UInt32 {
        i += 1  // the "u"
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let digit = current?.hexDigitValue else { throw fail("invalid \\u escape, expected 4 hex digits") }
            value = value << 4 | UInt32(digit)
            i += 1
        }
        return value
    }

    /// One multi-byte UTF-8 sequence (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF).
    mutating func utf8Sequence() throws(JSONParseError) {
        let lead = bytes[i]
        let (count, low, high): (Int, UInt8, UInt8) =
            switch lead {
            case 0xC2...0xDF: (1, 0x80, 0xBF)
            case 0xE0: (2, 0xA0, 0xBF)
            case 0xE1...0xEC, 0xEE...0xEF: (2, 0x80, 0xBF)
            case 0xED: (2, 0x80, 0x9F)
            case 0xF0: (3, 0x90, 0xBF)
            case 0xF1...0xF3: (3, 0x80, 0xBF)
            case 0xF4: (3, 0x80, 0x8F)
            default: throw fail("invalid UTF-8")
            }
        for k in 1...count {
            let bound = k == 1 ? low...high : 0x80...0xBF
            guard i + k < bytes.count, bound.contains(bytes[i + k]) else { throw fail("invalid UTF-8") }
        }
        i += count + 1
    }
}
