/// A document that could not be read: which document and what is wrong with it.
public struct DocumentError: Error, CustomStringConvertible, Sendable, Equatable {
    public let document: String
    public let reason: String

    public init(document: String, reason: String) {
        self.document = document
        self.reason = reason
    }

    public var description: String { "\(document): \(reason)" }
}

/// The defaults file: a JSON object, key → string | number | bool | object/array (stored as JSON text).
public enum DefaultsDocument {
    public static func parse(_ bytes: [UInt8], name: String) throws(DocumentError) -> [String: String] {
        let json: JSONValue
        do { json = try JSONValue.parse(bytes) } catch {
            throw DocumentError(document: name, reason: error.description)
        }
        guard let members = json.objectMembers else {
            throw DocumentError(document: name, reason: "expected a JSON object of key → value, got \(json.typeName)")
        }
        var values: [String: String] = [:]
        values.reserveCapacity(members.count)
        for (key, value) in members {
            guard let text = value.configText else {
                throw DocumentError(
                    document: name, reason: "key \(JSONValue.string(key).compactText): null is not a value")
            }
            try RemoteEntry.check(key, text, field: "key \(JSONValue.string(key).compactText)", document: name)
            values[key] = text
        }
        return values
    }
}

/// What every key and value of a document must be for the store and every reader after it (the
/// shell, the environment, hooks) to keep it exactly.
public enum RemoteEntry {
    /// Why `text` cannot be a key or value, or `nil`. NUL is refused: SQLite's C API, environment
    /// variables and shell words all end a string there, so such a key or value would be cut short
    /// somewhere, or two keys would become one.
    public static func problem(_ text: String, isKey: Bool) -> String? {
        // Over the bytes in place when they are contiguous (a native string): a generic walk of the
        // UTF-8 view costs several times as much, and every key and value of a document comes here.
        let hasNUL = text.utf8.withContiguousStorageIfAvailable { $0.contains(0) } ?? text.utf8.contains(0)
        return hasNUL ? "a \(isKey ? "key" : "value") may not contain NUL (U+0000)" : nil
    }

    /// `field` names the key in the error: made only when there is one (a document has thousands of keys).
    static func check(_ key: String, _ value: String, field: @autoclosure () -> String, document: String)
        throws(DocumentError)
    {
        if let problem = problem(key, isKey: true) ?? problem(value, isKey: false) {
            throw DocumentError(document: document, reason: "\(field()): \(problem)")
        }
    }

    /// A key as it appears in an error: as it is when it is a plain name (letters, digits, `_`, `-`),
    /// JSON-quoted otherwise, so no key can split, forge or blur a message.
    public static func quoted(_ key: String) -> String {
        let plain =
            !key.isEmpty
            && key.utf8.allSatisfy {
                ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x5F
                    || $0 == 0x2D
            }
        return plain ? key : JSONValue.string(key).compactText
    }
}

/// What a source delivered: a new snapshot, or word that nothing changed.
public enum RemoteDocument: Sendable, Equatable {
    /// The complete set of remote values (an empty set for `NO_TEMPLATE`/`EMPTY_CONFIG`).
    case update(values: RemoteValues, templateVersion: String?)
    case noChange

    /// Reads either document shape (agent.conf(5), rcagentd(8)): a fetch response (`entries`/`state`) or a
    /// template (`parameters`). Template conditions are not evaluated yet: each parameter's
    /// `defaultValue` applies, and `useInAppDefault` leaves the key to the local defaults.
    public static func parse(_ bytes: [UInt8], name: String) throws(DocumentError) -> RemoteDocument {
        try read(DocumentShape(bytes: bytes, document: name), name: name)
    }

    /// The same from a document's shape (read from its bytes, or from a document already parsed).
    public static func read(_ shape: DocumentShape, name: String) throws(DocumentError) -> RemoteDocument {
        if let type = shape.notObject {
            throw DocumentError(document: name, reason: "expected a JSON object, got \(type)")
        }
        if let parameters = shape.parameters {
            return try template(parameters, version: shape["version"]?["versionNumber"], name: name)
        }
        if shape["entries"] != nil || shape["state"] != nil { return try fetchResponse(shape.members, name: name) }
        throw DocumentError(
            document: name,
            reason: "neither a fetch response (\"entries\"/\"state\") nor a template (\"parameters\")")
    }

    private static func fetchResponse(_ json: JSONValue, name: String) throws(DocumentError) -> RemoteDocument {
        let version = try templateVersion(json["templateVersion"], field: "templateVersion", name: name)
        let state: String
        switch json["state"] {
        case nil: state = "UPDATE"
        case let .string(s)?: state = s
        case let other?:
            throw DocumentError(document: name, reason: "\"state\" must be a string, got \(other.typeName)")
        }
        switch state {
        case "NO_CHANGE":
            return .noChange
        case "NO_TEMPLATE", "EMPTY_CONFIG":
            return .update(values: [:], templateVersion: version)
        case "UPDATE":
            guard let entries = json["entries"] else { return .update(values: [:], templateVersion: version) }
            guard let members = entries.objectMembers else {
                throw DocumentError(document: name, reason: "\"entries\" must be an object, got \(entries.typeName)")
            }
            // Sized once: growing by doubling held the old array beside the new (a 4 MiB document
            // of 44,000 keys: 1 MB more at the peak). In the members' order, which is the values'.
            var values: [RemoteValues.Element] = []
            values.reserveCapacity(members.count)
            for (key, value) in members {
                // The key's name in an error, made only for one.
                func field() -> String { "entries.\(RemoteEntry.quoted(key))" }
                guard let text = value.configText else {
                    throw DocumentError(document: name, reason: "\(field()): null is not a value")
                }
                try RemoteEntry.check(key, text, field: field(), document: name)
                values.append((key, text))
            }
            return .update(values: RemoteValues(values), templateVersion: version)
        default:
            throw DocumentError(
                document: name,
                reason: "unknown state \"\(state)\" (expected UPDATE, NO_CHANGE, NO_TEMPLATE or EMPTY_CONFIG)")
        }
    }

    private static func template(_ parameters: DocumentShape.Parameters, version: JSONValue?, name: String)
        throws(DocumentError) -> RemoteDocument
    {
        guard case let .members(parameters) = parameters else {
            throw DocumentError(document: name, reason: "\"parameters\" must be an object")
        }
        var values: [RemoteValues.Element] = []
        values.reserveCapacity(parameters.count)
        for (key, parameter) in parameters {
            // The parameter's name in an error, made only for one.
            func field() -> String { "parameters.\(RemoteEntry.quoted(key))" }
            if let type = parameter.notObject {
                throw DocumentError(document: name, reason: "\(field()) must be an object, got \(type)")
            }
            switch parameter.defaultValue {
            case nil, .inAppDefault?: continue
            case let .text(text)?:
                try RemoteEntry.check(key, text, field: field(), document: name)
                values.append((key, text))
            case .notObject?, .noValue?:
                throw DocumentError(
                    document: name,
                    reason: "\(field()).defaultValue needs \"value\" or \"useInAppDefault\": true")
            case .nullValue?:
                throw DocumentError(document: name, reason: "\(field()).defaultValue.value must be a string, got null")
            case let .valueNotString(type)?:
                throw DocumentError(
                    document: name, reason: "\(field()).defaultValue.value must be a string, got \(type)")
            }
        }
        let version = try templateVersion(version, field: "version.versionNumber", name: name)
        return .update(values: RemoteValues(values), templateVersion: version)
    }

    /// Whether `text` is a template version number as a string: decimal digits, at most
    /// ``maximumVersionDigits`` of them.
    public static func isVersionNumber(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= maximumVersionDigits && text.utf8.allSatisfy { $0 >= 48 && $0 <= 57 }
    }

    /// The most digits a template version may have (Firebase's are int64s, 19): the version is
    /// stored, logged and sent in events.
    public static let maximumVersionDigits = 64

    /// Template versions are decimal strings in Firebase's JSON; numbers are accepted too.
    private static func templateVersion(_ value: JSONValue?, field: String, name: String) throws(DocumentError)
        -> String?
    {
        switch value {
        case nil, .null?: return nil
        case let .string(s)? where isVersionNumber(s): return s
        case let .integer(i)? where i >= 0: return String(i)
        case let other?:
            throw DocumentError(
                document: name, reason: "\"\(field)\" must be a decimal version number, got \(other.compactText)")
        }
    }
}
