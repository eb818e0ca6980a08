/// A JSON document of any shape: what defaults files, fetched documents, socket lines and
/// FCM-style messages are decoded into before the domain types read them.
///
/// Objects keep their keys in the order of their bytes so that re-serialization is deterministic;
/// strings and member names are compared by their bytes (``ByteKey``), never by canonical equivalence;
/// ``compactText`` writes the value back without insignificant whitespace.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case integer(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([(key: String, value: JSONValue)])

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case let (.bool(a), .bool(b)): a == b
        case let (.integer(a), .integer(b)): a == b
        case let (.double(a), .double(b)): a == b
        case let (.string(a), .string(b)): a.sameBytes(as: b)
        case let (.array(a), .array(b)): a == b
        case let (.object(a), .object(b)): a.elementsEqual(b) { $0.key.sameBytes(as: $1.key) && $0.value == $1.value }
        default: false
        }
    }

    /// Parses JSON text with ``JSONReader``: linear in its size, nesting at most
    /// ``maximumDepth`` levels, no duplicate member names. Errors describe what is wrong and where
    /// (line, column and byte offset).
    public static func parse(_ bytes: some Collection<UInt8>) throws(JSONParseError) -> JSONValue {
        let result = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(JSONParseError) in try JSONReader.parse(buffer) }
        }
        if let result { return try result.get() }
        return try parse(Array(bytes))
    }

    public static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        var text = text
        return try text.withUTF8 { buffer in Result { () throws(JSONParseError) in try JSONReader.parse(buffer) } }
            .get()
    }

    /// The deepest nesting of arrays and objects any parsed document may have.
    public static var maximumDepth: Int { JSONReader.maximumDepth }

    /// The value of `key` when this is an object: the member whose name is the same bytes.
    public subscript(key: String) -> JSONValue? {
        guard case let .object(members) = self else { return nil }
        return members.first { $0.key.sameBytes(as: key) }?.value
    }

    public var objectMembers: [(key: String, value: JSONValue)]? {
        if case let .object(members) = self { members } else { nil }
    }

    public var stringValue: String? {
        if case let .string(s) = self { s } else { nil }
    }

    /// A short name of the JSON type, for error messages.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .integer, .double: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    /// The value as Remote Config stores it: strings as they are, scalars as their JSON text,
    /// objects and arrays as compact JSON text. `nil` for JSON null.
    public var configText: String? {
        switch self {
        case .null: nil
        case let .string(s): s
        default: compactText
        }
    }

    /// Compact JSON text of this value.
    public var compactText: String {
        // Bytes sized once (grown by doubling, the text of an event or answer listing 44,000 changed
        // keys, 0.65 MB, held its old buffer beside one of twice the size: BENCHMARKS.md, issue 30),
        // made a `String` once.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(estimatedLength)
        write(toBytes: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// About the length of ``compactText`` (exact when no string needs an escape): a walk of the
    /// tree, reading each string's stored UTF-8 length, never its text.
    var estimatedLength: Int {
        switch self {
        case .null: 4
        case .bool: 5
        case .integer, .double: 20
        case let .string(s): s.utf8.count + 2
        case let .array(items): items.reduce(1 + max(items.count, 1)) { $0 + $1.estimatedLength }
        case let .object(members):
            members.reduce(1 + max(members.count, 1)) { $0 + $1.key.utf8.count + 3 + $1.value.estimatedLength }
        }
    }

    public func write(to out: inout String) {
        var bytes: [UInt8] = []
        write(toBytes: &bytes)
        out += String(decoding: bytes, as: UTF8.self)
    }

    /// Compact JSON text appended to `out` as UTF-8. Written into bytes and made a `String` once:
    /// a `String` grown piece by piece costs several hundred instructions per piece, and an
    /// activation's event and answer each hold thousands of keys.
    public func write(toBytes out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case let .bool(b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case let .integer(i): out.append(contentsOf: String(i).utf8)
        case let .double(d): out.append(contentsOf: Self.format(d).utf8)
        case let .string(s): Self.writeString(s, toBytes: &out)
        case let .array(items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                item.write(toBytes: &out)
            }
            out.append(UInt8(ascii: "]"))
        case let .object(members):
            out.append(UInt8(ascii: "{"))
            for (i, member) in members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                Self.writeString(member.key, toBytes: &out)
                out.append(UInt8(ascii: ":"))
                member.value.write(toBytes: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// ``writeString(_:to:)`` into UTF-8 bytes.
    static func writeString(_ s: String, toBytes out: inout [UInt8]) {
        guard !needsEscape(s) else {
            var escaped = ""
            writeString(s, to: &escaped)
            out.append(contentsOf: escaped.utf8)
            return
        }
        out.append(UInt8(ascii: "\""))
        out.append(contentsOf: s.utf8)
        out.append(UInt8(ascii: "\""))
    }

    /// Formats a finite double the shortest way that reads back the same; integral values
    /// within the exactly representable range print without a fraction.
    public static func format(_ d: Double) -> String {
        if d.isFinite, d == d.rounded(), abs(d) < 9_007_199_254_740_992 {
            return String(Int64(d))
        }
        return d.isFinite ? "\(d)" : "null"
    }

    public static func writeString(_ s: String, to out: inout String) {
        out += "\""
        // Most strings need no escape: they are appended whole, not scalar by scalar.
        if !needsEscape(s) {
            out += s
            out += "\""
            return
        }
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            // Line breaks outside ASCII are valid raw in JSON, but readers that split text into lines
            // by Unicode's rules (Python's splitlines, JavaScript before ES2019) would cut one JSON
            // line (a watch line, a list) in two: escaped, every document stays one line for all.
            case let c where c.value < 0x20 || c.value == 0x85 || c.value == 0x2028 || c.value == 0x2029:
                out += unicodeEscape(c)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }

    /// Whether ``writeString(_:to:)`` escapes anything in `s`: a control character, `"`, `\\`, U+0085,
    /// U+2028 or U+2029 (the only non-ASCII ones, `C2 85` and `E2 80 A8`/`A9` in UTF-8).
    static func needsEscape(_ s: String) -> Bool {
        func scan(_ bytes: some Sequence<UInt8>) -> Bool {
            var previous: UInt8 = 0
            var beforePrevious: UInt8 = 0
            for byte in bytes {
                switch byte {
                case 0..<0x20, 0x22, 0x5C: return true
                case 0x85 where previous == 0xC2: return true
                case 0xA8, 0xA9: if previous == 0x80 && beforePrevious == 0xE2 { return true }
                default: break
                }
                beforePrevious = previous
                previous = byte
            }
            return false
        }
        return s.utf8.withContiguousStorageIfAvailable { scan($0) } ?? scan(s.utf8)
    }

    /// `scalar` as JSON's `\uXXXX` escape (RFC 8259 section 7): a surrogate pair outside the Basic
    /// Multilingual Plane.
    public static func unicodeEscape(_ scalar: Unicode.Scalar) -> String {
        String(scalar).utf16.map { unit in
            let hex = String(unit, radix: 16)
            return "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        }.joined()
    }
}

public struct JSONParseError: Error, CustomStringConvertible, Sendable {
    public let reason: String
    public var description: String { "invalid JSON: \(reason)" }
}
