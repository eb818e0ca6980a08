/// Checks JSON text against RFC 8259 before it is decoded, and says where it is wrong.
///
/// The toolchain's JSONDecoder reports every syntax error as "The given data was not valid JSON"
/// with no position, and only checks the members it decodes: it takes trailing commas, bad escapes,
/// invalid UTF-8 and malformed numbers in members a typed decode skips. Validating first makes every
/// reader of a document (the typed fast path and the `JSONValue` tree) accept exactly the same texts,
/// and gives errors a line and column. It builds nothing, so it costs little beside the decode.
enum JSONSyntax {
    /// Nesting deeper than this is refused (as the decoder does), so no input can exhaust the stack.
    static let maximumDepth = 512

    static func validate(_ bytes: UnsafeBufferPointer<UInt8>) throws(JSONParseError) {
        var scanner = Scanner(bytes: bytes)
        try scanner.document()
    }

    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        var i = 0

        func fail(_ what: String, at offset: Int? = nil) -> JSONParseError {
            let offset = min(offset ?? i, bytes.count)
            var line = 1
            var lineStart = 0
            for index in 0..<offset where bytes[index] == UInt8(ascii: "\n") {
                line += 1
                lineStart = index + 1
            }
            return JSONParseError(reason: "\(what) at line \(line), column \(offset - lineStart + 1) (byte \(offset))")
        }

        var current: UInt8? { i < bytes.count ? bytes[i] : nil }

        mutating func skipSpace() {
            while let c = current, c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 { i += 1 }
        }

        func describe(_ c: UInt8?) -> String {
            guard let c else { return "end of input" }
            return c >= 0x20 && c < 0x7F ? "'\(Character(Unicode.Scalar(c)))'" : "byte 0x\(String(c, radix: 16))"
        }

        /// One value and nothing after it. Containers are tracked on an explicit stack, not by recursion.
        mutating func document() throws(JSONParseError) {
            // For each open container: true for an object.
            var open: [Bool] = []
            skipSpace()
            while true {
                // A value is expected here.
                switch current {
                case UInt8(ascii: "{")?, UInt8(ascii: "[")?:
                    let isObject = current == UInt8(ascii: "{")
                    guard open.count < JSONSyntax.maximumDepth else {
                        throw fail("nesting deeper than \(JSONSyntax.maximumDepth) levels")
                    }
                    i += 1
                    skipSpace()
                    if current == UInt8(ascii: isObject ? "}" : "]") {
                        i += 1
                    } else {
                        open.append(isObject)
                        if isObject { try memberName() }
                        continue
                    }
                case UInt8(ascii: "\"")?: try string()
                case UInt8(ascii: "t")?: try literal("true")
                case UInt8(ascii: "f")?: try literal("false")
                case UInt8(ascii: "n")?: try literal("null")
                case let c? where c == UInt8(ascii: "-") || (c >= 0x30 && c <= 0x39): try number()
                case let c: throw fail("expected a value, found \(describe(c))")
                }
                // After a value: close containers, or go on to the next element.
                while true {
                    skipSpace()
                    guard let isObject = open.last else {
                        guard i == bytes.count else { throw fail("unexpected \(describe(current)) after the value") }
                        return
                    }
                    if current == UInt8(ascii: ",") {
                        i += 1
                        skipSpace()
                        if isObject { try memberName() }
                        break
                    }
                    guard current == UInt8(ascii: isObject ? "}" : "]") else {
                        throw fail("expected ',' or '\(isObject ? "}" : "]")', found \(describe(current))")
                    }
                    i += 1
                    open.removeLast()
                }
            }
        }

        /// `"name" :` inside an object, leaving the scanner at the member's value.
        mutating func memberName() throws(JSONParseError) {
            guard current == UInt8(ascii: "\"") else {
                throw fail("expected a member name, found \(describe(current))")
            }
            try string()
            skipSpace()
            guard current == UInt8(ascii: ":") else {
                throw fail("expected ':' after a member name, found \(describe(current))")
            }
            i += 1
            skipSpace()
        }

        mutating func literal(_ word: StaticString) throws(JSONParseError) {
            let start = i
            for expected in UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount) {
                guard current == expected else { throw fail("invalid literal, expected \(word)", at: start) }
                i += 1
            }
        }

        mutating func number() throws(JSONParseError) {
            let start = i
            func digits(_ scanner: inout Scanner) -> Int {
                let first = scanner.i
                while let c = scanner.current, c >= 0x30 && c <= 0x39 { scanner.i += 1 }
                return scanner.i - first
            }
            if current == UInt8(ascii: "-") { i += 1 }
            let integerStart = i
            let integerDigits = digits(&self)
            guard integerDigits > 0 else { throw fail("invalid number, expected a digit", at: i) }
            if integerDigits > 1 && bytes[integerStart] == 0x30 {
                throw fail("invalid number, leading zero", at: integerStart)
            }
            if current == UInt8(ascii: ".") {
                i += 1
                guard digits(&self) > 0 else { throw fail("invalid number, expected a digit after '.'", at: i) }
            }
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                i += 1
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { i += 1 }
                guard digits(&self) > 0 else { throw fail("invalid number, expected an exponent", at: i) }
            }
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
            guard let value = Double(text), value.isFinite else { throw fail("number \(text) out of range", at: start) }
        }

        /// A string: escapes checked (surrogates paired), control characters refused, UTF-8 validated.
        mutating func string() throws(JSONParseError) {
            let start = i
            i += 1
            while true {
                guard let c = current else { throw fail("unterminated string", at: start) }
                switch c {
                case UInt8(ascii: "\""):
                    i += 1
                    return
                case UInt8(ascii: "\\"):
                    i += 1
                    switch current {
                    case UInt8(ascii: "\"")?, UInt8(ascii: "\\")?, UInt8(ascii: "/")?, UInt8(ascii: "b")?,
                        UInt8(ascii: "f")?, UInt8(ascii: "n")?, UInt8(ascii: "r")?, UInt8(ascii: "t")?:
                        i += 1
                    case UInt8(ascii: "u")?:
                        let escape = i - 1
                        let unit = try hex4()
                        if (0xD800...0xDBFF).contains(unit) {
                            guard current == UInt8(ascii: "\\"), i + 1 < bytes.count, bytes[i + 1] == UInt8(ascii: "u")
                            else { throw fail("invalid \\u escape: unpaired surrogate", at: escape) }
                            i += 1
                            guard (0xDC00...0xDFFF).contains(try hex4()) else {
                                throw fail("invalid \\u escape: unpaired surrogate", at: escape)
                            }
                        } else if (0xDC00...0xDFFF).contains(unit) {
                            throw fail("invalid \\u escape: unpaired surrogate", at: escape)
                        }
                    default:
                        throw fail("invalid escape \\\(describe(current))", at: i - 1)
                    }
                case 0..<0x20:
                    throw fail("control character \(describe(c)) in a string")
                case 0..<0x80:
                    i += 1
                default:
                    try utf8Sequence()
                }
            }
        }

        /// `uXXXX` after the backslash: returns the code unit.
        mutating func hex4() throws(JSONParseError) -> UInt32 {
            i += 1  // the "u"
            var value: UInt32 = 0
            for _ in 0..<4 {
                guard let c = current else { throw fail("invalid \\u escape, expected 4 hex digits") }
                let digit: UInt8
                switch c {
                case 0x30...0x39: digit = c - 0x30
                case 0x41...0x46: digit = c - 0x41 + 10
                case 0x61...0x66: digit = c - 0x61 + 10
                default: throw fail("invalid \\u escape, expected 4 hex digits")
                }
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
}
