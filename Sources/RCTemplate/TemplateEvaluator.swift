import RCCore

/// What a template's conditions are evaluated against: the device's identity and its custom signals.
public struct EvaluationContext: Sendable, Equatable {
    /// The randomization id of percent conditions (the agent's stable device id). Empty: every
    /// percent condition is false.
    public var deviceId: String
    /// Custom signals by key (`[Signals]` in the config file).
    public var signals: [String: String]

    public init(deviceId: String, signals: [String: String] = [:]) {
        self.deviceId = deviceId
        self.signals = signals
    }
}

/// The values a template resolves to on one device.
public struct TemplateEvaluation: Sendable, Equatable {
    /// Parameter key → value. Keys that resolve to `useInAppDefault`, or have neither a matching
    /// conditional value nor a default, are absent: the local defaults apply to them.
    public var values: RemoteValues
    /// `version.versionNumber`, when the template has one.
    public var templateVersion: String?
    /// Names of conditions the agent could not evaluate and treated as false: client-template expression
    /// strings, and condition kinds or operators it does not know. In the order of their bytes, each
    /// name once.
    public var unsupportedConditions: [String]

    public init(values: RemoteValues, templateVersion: String?, unsupportedConditions: [String]) {
        self.values = values
        self.templateVersion = templateVersion
        self.unsupportedConditions = unsupportedConditions
    }
}

/// Resolves a Remote Config template document for one device, evaluating server-template
/// conditions locally.
public enum TemplateEvaluator {
    /// Evaluates the template in `bytes` (`name` labels errors, usually the file or URL it came from).
    ///
    /// Each parameter takes the value of the first condition in the template's `conditions` order that
    /// is true and has an entry in the parameter's `conditionalValues`; otherwise its `defaultValue`.
    /// A `conditionalValues` entry naming no condition never matches. Parameters inside
    /// `parameterGroups` are not read, as in the Admin SDK's server-template evaluation.
    public static func evaluate(_ bytes: [UInt8], name: String, context: EvaluationContext) throws(DocumentError)
        -> TemplateEvaluation
    {
        try evaluate(DocumentShape(bytes: bytes, document: name), name: name, context: context)
    }

    /// The same for a template's shape (read from its bytes, or from a template already parsed).
    public static func evaluate(_ shape: DocumentShape, name: String, context: EvaluationContext)
        throws(DocumentError) -> TemplateEvaluation
    {
        let reader = ConditionReader(document: name)
        if let type = shape.notObject {
            throw reader.error("not a template: expected a JSON object with \"parameters\", got \(type)")
        }
        let parameters: [(key: String, parameter: DocumentShape.Parameter)]
        switch shape.parameters {
        case nil, .notObject("null")?: throw reader.error("not a template: no \"parameters\" object")
        case let .notObject(type)?: throw reader.error("\"parameters\" must be an object, got \(type)")
        case let .members(members)?: parameters = members
        }

        let conditions = try namedConditions(shape["conditions"], reader: reader)
        // Each regex may take BoundedRegex.matchLimit steps: the count bounds a template's evaluation.
        let regexTargets = conditions.reduce(0) { total, condition in
            guard case let .structured(tree) = condition.body else { return total }
            return total + tree.regexTargetCount
        }
        guard regexTargets <= maximumRegexTargets else {
            throw reader.error(
                "\(regexTargets) STRING_CONTAINS_REGEX targets; a template may have at most \(maximumRegexTargets)")
        }
        let evaluator = ConditionEvaluator(context: context)
        // Evaluated once each. A parameter then takes, of the true conditions it has values for, the one
        // first in `conditions` order: a walk over its own values, so the cost stays linear in the
        // template's size (not conditions × parameters).
        // Names by their bytes, as the server matches them: a look-alike name is another condition.
        var priorityOfTrue: [ByteKey: Int] = [:]
        for (index, condition) in conditions.enumerated() {
            if case let .structured(tree) = condition.body, evaluator.evaluate(tree) {
                priorityOfTrue[ByteKey(condition.name)] = index
            }
        }

        // In the members' order, which is the values' (``RemoteValues``).
        var values: [RemoteValues.Element] = []
        values.reserveCapacity(parameters.count)
        for (key, parameter) in parameters {
            // The parameter's place in an error, made only for one (a template has thousands).
            func path() -> String { "parameters.\(RemoteEntry.quoted(key))" }
            if let problem = RemoteEntry.problem(key, isKey: true) { throw reader.error("\(path()): \(problem)") }
            if let type = parameter.notObject { throw reader.error("\(path()) must be an object, got \(type)") }
            var chosen: (priority: Int, value: ParameterValue)?
            switch parameter.conditionalValues {
            case .absent: break
            case let .notObject(type): throw reader.error("\(path()).conditionalValues must be an object, got \(type)")
            case let .members(members):
                for (condition, value) in members {
                    let value = try parameterValue(
                        value, path: "\(path()).conditionalValues.\(RemoteEntry.quoted(condition))", reader: reader)
                    if let priority = priorityOfTrue[ByteKey(condition)], priority < chosen?.priority ?? .max {
                        chosen = (priority, value)
                    }
                }
            }
            // A null default is refused, as the reader of templates without conditions refuses it.
            let defaultValue = try parameter.defaultValue.map { (value) throws(DocumentError) in
                try parameterValue(value, path: path() + ".defaultValue", reader: reader)
            }
            if case let .value(text)? = chosen?.value ?? defaultValue { values.append((key, text)) }
        }

        return TemplateEvaluation(
            values: RemoteValues(values),
            templateVersion: try templateVersion(shape["version"], reader: reader),
            unsupportedConditions: Set(conditions.filter { !$0.isSupported }.map { ByteKey($0.name) }).sorted().map(
                \.text))
    }

    /// Regular expressions one template may hold in all its conditions: with ``BoundedRegex``'s limit
    /// per match, a template's regexes cost at most this × 10,000 steps (a fraction of a second).
    public static let maximumRegexTargets = 1_000

    /// A parameter value: `{"value": "..."}`, or `{"useInAppDefault": true}` (the key is left to the
    /// local defaults).
    private enum ParameterValue {
        case value(String)
        case inAppDefault
    }

    private static func namedConditions(_ json: JSONValue?, reader: ConditionReader) throws(DocumentError)
        -> [NamedCondition]
    {
        guard let json = present(json) else { return [] }
        guard case let .array(items) = json else {
            throw reader.error("\"conditions\" must be an array, got \(json.typeName)")
        }
        var conditions: [NamedCondition] = []
        var names: Set<ByteKey> = []
        for (index, item) in items.enumerated() {
            let condition = try reader.namedCondition(item, path: "conditions[\(index)]")
            guard names.insert(ByteKey(condition.name)).inserted else {
                throw reader.error(
                    "conditions[\(index)].name \"\(condition.name)\" is already used by an earlier condition")
            }
            conditions.append(condition)
        }
        return conditions
    }

    private static func parameterValue(
        _ value: DocumentShape.Value, path: @autoclosure () -> String, reader: ConditionReader
    ) throws(DocumentError) -> ParameterValue {
        switch value {
        case .inAppDefault: return .inAppDefault
        case let .text(text):
            if let problem = RemoteEntry.problem(text, isKey: false) {
                throw reader.error("\(path()).value: \(problem)")
            }
            return .value(text)
        case let .notObject(type): throw reader.error("\(path()) must be an object, got \(type)")
        case .noValue, .nullValue: throw reader.error("\(path()) needs \"value\" or \"useInAppDefault\": true")
        case let .valueNotString(type): throw reader.error("\(path()).value must be a string, got \(type)")
        }
    }

    /// Template versions are decimal strings in Firebase's JSON (at most
    /// ``RemoteDocument/maximumVersionDigits`` digits); non-negative integers are accepted too.
    private static func templateVersion(_ json: JSONValue?, reader: ConditionReader) throws(DocumentError) -> String? {
        guard let version = present(json) else { return nil }
        guard version.objectMembers != nil else {
            throw reader.error("\"version\" must be an object, got \(version.typeName)")
        }
        switch present(version["versionNumber"]) {
        case nil: return nil
        case let .string(s)? where RemoteDocument.isVersionNumber(s): return s
        case let .integer(i)? where i >= 0: return String(i)
        case let other?:
            throw reader.error("\"version.versionNumber\" must be a decimal version number, got \(other.compactText)")
        }
    }

    private static func present(_ value: JSONValue?) -> JSONValue? {
        if case .null? = value { nil } else { value }
    }
}
