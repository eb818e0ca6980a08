/// A fetched document as its readers look at it (``RemoteDocument`` and the template evaluator): its
/// top-level members, with a template's `parameters` already reduced to what a parameter can say.
///
/// Read from the bytes (``init(bytes:)``), the parameters never become a ``JSONValue`` tree: each
/// parameter is its key, its default and its conditional values, and the value text the only string
/// it allocates. Building a 3,000-parameter template's tree, looking its members up by name and
/// releasing it was a third of reading it (BENCHMARKS.md). The bytes are checked as ``JSONValue``
/// checks them (RFC 8259, nesting, names given twice): only what the tree would have held goes.
/// A document already parsed (a signed envelope's) reads through ``init(_:)`` into the same shape.
public struct DocumentShape: Sendable {
    /// The document's JSON type when it is not an object (every reader refuses it then).
    public let notObject: String?
    /// The top-level members other than `parameters`, as they are (an object).
    public let members: JSONValue
    /// `parameters`: `nil` when the document has no such member.
    public let parameters: Parameters?

    /// A top-level member other than `parameters`.
    public subscript(name: String) -> JSONValue? { members[name] }

    /// The `parameters` member.
    public enum Parameters: Sendable {
        /// Not an object: its JSON type.
        case notObject(String)
        /// Each parameter by key, in the keys' byte order (as a parsed object's members).
        case members([(key: String, parameter: Parameter)])
    }

    /// One parameter: `{"defaultValue": …, "conditionalValues": {…}}`; other members are not read.
    public struct Parameter: Sendable {
        /// The parameter's JSON type when it is not an object.
        public var notObject: String?
        /// `defaultValue`, `nil` when absent (a `null` one is ``Value/notObject(_:)``).
        public var defaultValue: Value?
        public var conditionalValues: ConditionalValues = .absent

        init(notObject: String? = nil) { self.notObject = notObject }
    }

    /// `conditionalValues`: condition name → value.
    public enum ConditionalValues: Sendable {
        /// Absent or `null`.
        case absent
        /// Not an object: its JSON type.
        case notObject(String)
        /// By condition name, in the names' byte order.
        case members([(condition: String, value: Value)])
    }

    /// A parameter value: `{"value": "..."}` or `{"useInAppDefault": true}`, or what is wrong with it.
    public enum Value: Sendable {
        /// `"useInAppDefault": true` (whatever `value` says).
        case inAppDefault
        /// `value`, a string.
        case text(String)
        /// Not an object: its JSON type.
        case notObject(String)
        /// An object without `value` (and not `useInAppDefault`).
        case noValue
        /// `"value": null`.
        case nullValue
        /// `value` of another type: its JSON type.
        case valueNotString(String)
    }

    /// Reads a document's bytes, checking them as ``JSONValue/parse(_:)`` does: the same errors for
    /// the same bytes.
    public init(bytes: some Collection<UInt8>) throws(JSONParseError) {
        let result = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(JSONParseError) in
                var scanner = JSONReader.Scanner(bytes: buffer)
                return try scanner.documentShape()
            }
        }
        if let result {
            self = try result.get()
        } else {
            try self.init(bytes: Array(bytes))
        }
    }

    /// The same, its error a ``DocumentError`` naming the document (`name`: its file or URL).
    public init(bytes: some Collection<UInt8>, document name: String) throws(DocumentError) {
        do { try self.init(bytes: bytes) } catch { throw DocumentError(document: name, reason: error.description) }
    }

    init(notObject: String?, members: JSONValue, parameters: Parameters?) {
        self.notObject = notObject
        self.members = members
        self.parameters = parameters
    }

    /// The shape of a document already parsed.
    public init(_ json: JSONValue) {
        guard let top = json.objectMembers else {
            self.init(notObject: json.typeName, members: .object([]), parameters: nil)
            return
        }
        var parameters: Parameters?
        var rest: [(key: String, value: JSONValue)] = []
        for member in top {
            guard member.key.sameBytes(as: "parameters") else {
                rest.append(member)
                continue
            }
            guard let keyed = member.value.objectMembers else {
                parameters = .notObject(member.value.typeName)
                continue
            }
            parameters = .members(keyed.map { ($0.key, Self.parameter($0.value)) })
        }
        self.init(notObject: nil, members: .object(rest), parameters: parameters)
    }

    private static func parameter(_ json: JSONValue) -> Parameter {
        guard json.objectMembers != nil else { return Parameter(notObject: json.typeName) }
        var parameter = Parameter()
        parameter.defaultValue = json["defaultValue"].map(value)
        switch json["conditionalValues"] {
        case nil, .null?: break
        case let conditional?:
            guard let members = conditional.objectMembers else {
                parameter.conditionalValues = .notObject(conditional.typeName)
                break
            }
            parameter.conditionalValues = .members(members.map { ($0.key, value($0.value)) })
        }
        return parameter
    }

    private static func value(_ json: JSONValue) -> Value {
        guard json.objectMembers != nil else { return .notObject(json.typeName) }
        return value(useInAppDefault: json["useInAppDefault"], value: json["value"])
    }

    /// A value object from its two members (`nil`: absent).
    static func value(useInAppDefault: JSONValue?, value: JSONValue?) -> Value {
        if case .bool(true)? = useInAppDefault { return .inAppDefault }
        switch value {
        case nil: return .noValue
        case .null?: return .nullValue
        case let .string(text)?: return .text(text)
        case let other?: return .valueNotString(other.typeName)
        }
    }
}

/// ``DocumentShape`` from the bytes: the objects down to each parameter value are read member by member
/// (``JSONReader/Scanner/openObject(depth:)``); every other value is parsed whole, as a tree.
extension JSONReader.Scanner {
    mutating func documentShape() throws(JSONParseError) -> DocumentShape {
        skipSpace()
        guard var top = try openObject(depth: 0) else {
            let json = try document()
            return DocumentShape(notObject: json.typeName, members: .object([]), parameters: nil)
        }
        var parameters: DocumentShape.Parameters?
        var rest: [(key: String, value: JSONValue)] = []
        while let name = try nextMember(of: &top) {
            if name.sameBytes(as: "parameters") {
                parameters = try parametersShape()
            } else {
                rest.append((name, try value(depth: 1)))
            }
        }
        guard i == bytes.count else { throw fail("unexpected \(describe(current)) after the value") }
        return DocumentShape(notObject: nil, members: .object(inByteOrder(rest, \.key)), parameters: parameters)
    }

    private mutating func parametersShape() throws(JSONParseError) -> DocumentShape.Parameters {
        guard var object = try openObject(depth: 1) else { return .notObject(try value(depth: 1).typeName) }
        var members: [(key: String, parameter: DocumentShape.Parameter)] = []
        while let key = try nextMember(of: &object) { members.append((key, try parameterShape())) }
        return .members(inByteOrder(members, \.key))
    }

    private mutating func parameterShape() throws(JSONParseError) -> DocumentShape.Parameter {
        guard var object = try openObject(depth: 2) else {
            return DocumentShape.Parameter(notObject: try value(depth: 2).typeName)
        }
        var parameter = DocumentShape.Parameter()
        while let name = try nextMember(of: &object) {
            if name.sameBytes(as: "defaultValue") {
                parameter.defaultValue = try valueShape(depth: 3)
            } else if name.sameBytes(as: "conditionalValues") {
                parameter.conditionalValues = try conditionalValuesShape()
            } else {
                _ = try value(depth: 3)
            }
        }
        return parameter
    }

    private mutating func conditionalValuesShape() throws(JSONParseError) -> DocumentShape.ConditionalValues {
        guard var object = try openObject(depth: 3) else {
            let json = try value(depth: 3)
            return json == .null ? .absent : .notObject(json.typeName)
        }
        var members: [(condition: String, value: DocumentShape.Value)] = []
        while let name = try nextMember(of: &object) { members.append((name, try valueShape(depth: 4))) }
        return .members(inByteOrder(members, \.condition))
    }

    private mutating func valueShape(depth: Int) throws(JSONParseError) -> DocumentShape.Value {
        guard var object = try openObject(depth: depth) else { return .notObject(try value(depth: depth).typeName) }
        var useInAppDefault: JSONValue?
        var text: JSONValue?
        while let name = try nextMember(of: &object) {
            if name.sameBytes(as: "value") {
                text = try value(depth: depth + 1)
            } else if name.sameBytes(as: "useInAppDefault") {
                useInAppDefault = try value(depth: depth + 1)
            } else {
                _ = try value(depth: depth + 1)
            }
        }
        return DocumentShape.value(useInAppDefault: useInAppDefault, value: text)
    }

    /// The members of the object just closed in their names' byte order, as a parsed object's (their
    /// names were checked when it closed: none is there twice).
    private func inByteOrder<Member>(_ members: [Member], _ name: (Member) -> String) -> [Member] {
        lastObjectInOrder ? members : members.sorted { name($0).precedesByBytes(name($1)) }
    }
}
