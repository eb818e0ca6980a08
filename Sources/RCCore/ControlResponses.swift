/// The daemon's answers on the control socket (docs/protocol.md), one type per op, shared by the
/// daemon (which encodes them with `json`) and the CLI (which decodes them with `parse`/`reply`), so
/// that neither side reads or writes a member by a string of its own.
///
/// Decoding is tolerant of members it does not know (a newer daemon may add some) and strict on the
/// types of those it does: a wrong type is a ``ControlResponseError`` naming the member.
public protocol ControlResponse: Sendable, Equatable {
    /// The members after `"ok":true`, in wire order.
    var members: [(key: String, value: JSONValue)] { get }
    /// Reads the members of an `ok` response.
    init(reading response: ControlResponseReader) throws(ControlResponseError)
}

extension ControlResponse {
    /// `{"ok":true, members...}`.
    public var json: JSONValue { .ok(members) }

    /// Decodes an `ok` response; an error response or a malformed one throws.
    public static func parse(_ json: JSONValue, at path: String = "") throws(ControlResponseError) -> Self {
        switch try reply(json, at: path) {
        case let .success(response): return response
        case let .failure(error):
            throw ControlResponseError(field: path.isEmpty ? "ok" : "\(path).ok", "is false (\(error.code): \(error))")
        }
    }

    /// Decodes either answer the daemon may give: this response, or a ``ControlError``.
    public static func reply(_ json: JSONValue, at path: String = "") throws(ControlResponseError) -> Result<
        Self, ControlError
    > {
        let reader = try ControlResponseReader(json, at: path)
        if try reader.bool("ok") {
            return .success(try Self(reading: reader))
        }
        return .failure(try ControlError(reading: reader))
    }
}

extension Result where Success: ControlResponse, Failure == ControlError {
    /// The response line for either outcome.
    public var json: JSONValue {
        switch self {
        case let .success(response): response.json
        case let .failure(error): error.json
        }
    }
}

/// A daemon answer that does not have the shape docs/protocol.md gives it.
public struct ControlResponseError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The member at fault, as a path (`fetch.changedKeys[2]`); empty for the response as a whole.
    public let field: String
    public let reason: String

    public init(field: String, _ reason: String) {
        self.field = field
        self.reason = reason
    }

    public var description: String {
        field.isEmpty ? "invalid response: \(reason)" : "invalid response: \"\(field)\" \(reason)"
    }
}

/// Typed access to the members of one response object; every error names the member's path.
public struct ControlResponseReader: Sendable {
    public let json: JSONValue
    /// Where this object sits in the response (`""` at the top, `fetch` for a message's fetch).
    public let path: String

    public init(_ json: JSONValue, at path: String = "") throws(ControlResponseError) {
        guard json.objectMembers != nil else {
            throw ControlResponseError(field: path, "must be a JSON object, got \(json.typeName)")
        }
        self.json = json
        self.path = path
    }

    /// The path of member `name`, for error messages.
    public func field(_ name: String) -> String { path.isEmpty ? name : "\(path).\(name)" }

    /// The member, `nil` when absent.
    public func value(_ name: String) -> JSONValue? { json[name] }

    private func mismatch(_ name: String, _ expected: String, _ got: JSONValue?) -> ControlResponseError {
        ControlResponseError(field: field(name), got.map { "must be \(expected), got \($0.typeName)" } ?? "is missing")
    }

    public func bool(_ name: String) throws(ControlResponseError) -> Bool {
        guard case let .bool(b)? = json[name] else { throw mismatch(name, "true or false", json[name]) }
        return b
    }

    public func integer(_ name: String) throws(ControlResponseError) -> Int64 {
        guard case let .integer(i)? = json[name] else { throw mismatch(name, "an integer", json[name]) }
        return i
    }

    public func string(_ name: String) throws(ControlResponseError) -> String {
        guard case let .string(s)? = json[name] else { throw mismatch(name, "a string", json[name]) }
        return s
    }

    /// A string, or `nil` when the member is absent or `null`.
    public func optionalString(_ name: String) throws(ControlResponseError) -> String? {
        switch json[name] {
        case nil, .null?: return nil
        case let .string(s)?: return s
        case let other?: throw mismatch(name, "a string or null", other)
        }
    }

    public func strings(_ name: String) throws(ControlResponseError) -> [String] {
        guard case let .array(items)? = json[name] else { throw mismatch(name, "an array of strings", json[name]) }
        var strings: [String] = []
        strings.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            guard case let .string(s) = item else {
                throw ControlResponseError(field: "\(field(name))[\(index)]", "must be a string, got \(item.typeName)")
            }
            strings.append(s)
        }
        return strings
    }
}

extension ControlError {
    /// Reads `{"ok":false,"error":{"code":"...","message":"..."}}`. A code this side does not know is
    /// kept as it is: a newer daemon may say more precisely what failed.
    public init(reading response: ControlResponseReader) throws(ControlResponseError) {
        guard let error = response.value("error") else {
            throw ControlResponseError(field: response.field("error"), "is missing")
        }
        let reader = try ControlResponseReader(error, at: response.field("error"))
        self.init(Code(rawValue: try reader.string("code")), try reader.string("message"))
    }

    /// Decodes an error response.
    public static func parse(_ json: JSONValue, at path: String = "") throws(ControlResponseError) -> ControlError {
        let reader = try ControlResponseReader(json, at: path)
        guard try !reader.bool("ok") else { throw ControlResponseError(field: reader.field("ok"), "is true") }
        return try ControlError(reading: reader)
    }
}

extension JSONValue {
    /// A string, or `null` for `nil`.
    static func optional(_ s: String?) -> JSONValue { s.map(JSONValue.string) ?? .null }
}
