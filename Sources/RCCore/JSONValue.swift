import FoundationEssentials

/// A JSON document of any shape: what defaults files, fetched documents, socket lines and
/// FCM-style messages are decoded into before the domain types read them.
///
/// Objects keep their keys in sorted order so that re-serialization is deterministic;
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
        case let (.string(a), .string(b)): a == b
        case let (.array(a), .array(b)): a == b
        case let (.object(a), .object(b)): a.elementsEqual(b) { $0.key == $1.key && $0.value == $1.value }
        default: false
        }
    }

    /// Parses JSON text. Errors describe what is wrong and where (line, column and byte offset).
    public static func parse(_ bytes: some Collection<UInt8>) throws(JSONParseError) -> JSONValue {
        let data = Data(bytes)
        try validate(data)
        do {
            return try JSONDecoder().decode(JSONValue.self, from: data)
        } catch let error as DecodingError {
            throw JSONParseError(reason: Self.describe(error))
        } catch {
            throw JSONParseError(reason: "\(error)")
        }
    }

    public static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    /// Checks the syntax (RFC 8259) of `data`, which the decoder does not do fully (see ``JSONSyntax``).
    static func validate(_ data: Data) throws(JSONParseError) {
        let result = data.withUnsafeBytes { raw in
            Result { () throws(JSONParseError) in try JSONSyntax.validate(raw.assumingMemoryBound(to: UInt8.self)) }
        }
        try result.get()
    }

    private static func describe(_ error: DecodingError) -> String {
        switch error {
        case let .dataCorrupted(context):
            // The underlying error carries "around line N, column M" for syntax errors.
            if let underlying = context.underlyingError {
                return "\(underlying)".replacing("\n", with: " ")
            }
            return context.debugDescription
        case let .typeMismatch(_, context), let .valueNotFound(_, context), let .keyNotFound(_, context):
            return context.debugDescription
        @unknown default:
            return "\(error)"
        }
    }

    /// The value of `key` when this is an object.
    public subscript(key: String) -> JSONValue? {
        guard case let .object(members) = self else { return nil }
        return members.first { $0.key == key }?.value
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
        write(to: &out)
        return out
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
            case let c where c.value < 0x20:
                let hex = String(c.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

public struct JSONParseError: Error, CustomStringConvertible, Sendable {
    public let reason: String
    public var description: String { "invalid JSON: \(reason)" }
}

extension JSONValue: Decodable {
    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    // Strings first: they are most of what config documents hold, and every failed attempt
    // below costs a thrown DecodingError (this order halves the decode time of a large template).
    public init(from decoder: any Decoder) throws {
        let single = try decoder.singleValueContainer()
        if let s = try? single.decode(String.self) {
            self = .string(s)
        } else if single.decodeNil() {
            self = .null
        } else if let keyed = try? decoder.container(keyedBy: AnyKey.self) {
            var members: [(key: String, value: JSONValue)] = []
            for key in keyed.allKeys {
                members.append((key.stringValue, try keyed.decode(JSONValue.self, forKey: key)))
            }
            members.sort { $0.key < $1.key }
            self = .object(members)
        } else if var unkeyed = try? decoder.unkeyedContainer() {
            var items: [JSONValue] = []
            while !unkeyed.isAtEnd { items.append(try unkeyed.decode(JSONValue.self)) }
            self = .array(items)
        } else if let b = try? single.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? single.decode(Int64.self) {
            self = .integer(i)
        } else {
            self = .double(try single.decode(Double.self))
        }
    }
}
