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
        var out = ""
        // Sized once: grown by doubling, the text of an event or answer listing 44,000 changed keys
        // (0.65 MB) held its old buffer beside one of twice the size (BENCHMARKS.md, issue 30).
        out.reserveCapacity(estimatedLength)
        write(to: &out)
        return out
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
        switch self {
        case .null: out += "null"
        case let .bool(b): out += b ? "true" : "false"
        case let .integer(i): out += String(i)
        case let .double(d): out += Self.format(d)
        case let .string(s): Self.writeString(s, to: &out)
        case let .array(items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                item.write(to: &out)
            }
            out += "]"
        case let .object(members):
            out += "{"
            for (i, member) in members.enumerated() {
                if i > 0 { out += "," }
                Self.writeString(member.key, to: &out)
                out += ":"
                member.value.write(to: &out)
            }
            out += "}"
        }
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
