import RCCore

/// One node of a server-template condition: the structured model Firebase Admin SDKs evaluate
/// in-process (firebase-admin-node `src/remote-config/condition-evaluator-internal.ts`).
///
/// The JSON is a "one of" object: `{"orCondition": {"conditions": [...]}}`, `{"andCondition": ...}`,
/// `{"true": {}}`, `{"false": {}}`, `{"percent": {...}}` or `{"customSignal": {...}}`.
indirect enum TemplateCondition: Sendable, Equatable {
    case or([TemplateCondition])
    case and([TemplateCondition])
    case `true`
    case `false`
    case percent(PercentCondition)
    case customSignal(CustomSignalCondition)
    /// A kind this agent does not know, named by the object's members. It evaluates to false, as in the
    /// Admin SDK (forward compatibility), and the named condition holding it is reported.
    case unknown(members: [String])

    /// Whether every node and operator of the tree is one this agent understands.
    /// How many regular expressions evaluating this condition may match: each costs up to
    /// ``BoundedRegex/matchLimit`` steps, so a template's total is bounded (see ``TemplateEvaluator``).
    var regexTargetCount: Int {
        switch self {
        case let .or(conditions), let .and(conditions): conditions.reduce(0) { $0 + $1.regexTargetCount }
        case let .customSignal(signal) where signal.customSignalOperator == .stringContainsRegex:
            signal.targetCustomSignalValues.count
        default: 0
        }
    }

    var isSupported: Bool {
        switch self {
        case let .or(conditions), let .and(conditions): conditions.allSatisfy(\.isSupported)
        case .true, .false: true
        case let .percent(percent): percent.percentOperator.isKnown
        case let .customSignal(signal): signal.customSignalOperator.isKnown
        case .unknown: false
        }
    }
}

/// A random-percentage condition: the device's micro-percentile (0 ..< 100,000,000) against bounds.
struct PercentCondition: Sendable, Equatable {
    enum Operator: Sendable, Equatable {
        case lessOrEqual
        case greaterThan
        /// `lower < x ≤ upper`.
        case between
        /// `UNKNOWN` or no operator: false.
        case unspecified
        /// An operator name this agent does not know: false, and reported.
        case unrecognized(String)

        var isKnown: Bool { if case .unrecognized = self { false } else { true } }
    }

    var percentOperator: Operator
    /// Empty when the template has none: the hash input is then the device id alone.
    var seed: String
    // Bounds are doubles because JSON numbers are: a fractional bound compares as it would in the Admin SDK.
    var microPercent: Double
    var microPercentLowerBound: Double
    var microPercentUpperBound: Double
}

/// A custom-signal condition: the device's value for `key` (from `[Signals]`) against target values.
struct CustomSignalCondition: Sendable, Equatable {
    enum Comparison: Sendable, Equatable {
        case lessThan, lessEqual, equal, notEqual, greaterThan, greaterEqual

        /// Whether an ordering (negative: actual < target, zero: equal, positive: actual > target) satisfies this.
        func holds(_ order: Int) -> Bool {
            switch self {
            case .lessThan: order < 0
            case .lessEqual: order <= 0
            case .equal: order == 0
            case .notEqual: order != 0
            case .greaterThan: order > 0
            case .greaterEqual: order >= 0
            }
        }
    }

    enum Operator: Sendable, Equatable {
        case stringContains
        case stringDoesNotContain
        case stringExactlyMatches
        case stringContainsRegex
        case numeric(Comparison)
        case semanticVersion(Comparison)
        /// `UNKNOWN` or no operator: false.
        case unspecified
        /// An operator name this agent does not know: false, and reported.
        case unrecognized(String)

        var isKnown: Bool { if case .unrecognized = self { false } else { true } }

        init(name: String) {
            let comparisons: [(String, Comparison)] = [
                ("LESS_THAN", .lessThan), ("LESS_EQUAL", .lessEqual), ("EQUAL", .equal),
                ("NOT_EQUAL", .notEqual), ("GREATER_THAN", .greaterThan), ("GREATER_EQUAL", .greaterEqual),
            ]
            switch name {
            case "STRING_CONTAINS": self = .stringContains
            case "STRING_DOES_NOT_CONTAIN": self = .stringDoesNotContain
            case "STRING_EXACTLY_MATCHES": self = .stringExactlyMatches
            case "STRING_CONTAINS_REGEX": self = .stringContainsRegex
            case "UNKNOWN": self = .unspecified
            default:
                for (suffix, comparison) in comparisons {
                    if name == "NUMERIC_" + suffix {
                        self = .numeric(comparison)
                        return
                    }
                    if name == "SEMANTIC_VERSION_" + suffix {
                        self = .semanticVersion(comparison)
                        return
                    }
                }
                self = .unrecognized(name)
            }
        }
    }

    var customSignalOperator: Operator
    /// Empty when the template has none (the condition is then false).
    var customSignalKey: String
    var targetCustomSignalValues: [String]
}

/// An entry of a template's `conditions` array: a name and either a structured condition (server
/// templates) or a client-template expression string, which this agent does not evaluate.
struct NamedCondition: Sendable, Equatable {
    enum Body: Sendable, Equatable {
        case structured(TemplateCondition)
        case expression(String)
    }

    var name: String
    var body: Body

    /// Whether the agent can evaluate this condition; if not, it is false and reported.
    var isSupported: Bool {
        switch body {
        case let .structured(condition): condition.isSupported
        case .expression: false
        }
    }
}

// MARK: - Reading the JSON

/// Reads condition JSON, throwing ``DocumentError`` with the JSON path of whatever is wrong.
///
/// Lenient where the Admin SDK is (absent fields read as empty or 0, unknown kinds and operators
/// are false), strict about types: a field of the wrong JSON type is an error, never a guess.
struct ConditionReader {
    let document: String

    func error(_ reason: String) -> DocumentError { DocumentError(document: document, reason: reason) }

    /// Reads `conditions[index]`: `{"name": ..., "condition": {...}}` or `{"name": ..., "expression": "..."}`.
    func namedCondition(_ json: JSONValue, path: String) throws(DocumentError) -> NamedCondition {
        guard json.objectMembers != nil else { throw error("\(path) must be an object, got \(json.typeName)") }
        guard case let .string(name)? = json["name"], !name.isEmpty else {
            throw error("\(path).name must be a non-empty string, got \(json["name"]?.compactText ?? "nothing")")
        }
        if let condition = present(json["condition"]) {
            return NamedCondition(
                name: name, body: .structured(try self.condition(condition, path: path + ".condition")))
        }
        switch present(json["expression"]) {
        case let .string(expression)?:
            return NamedCondition(name: name, body: .expression(expression))
        case let other?:
            throw error("\(path).expression must be a string, got \(other.typeName)")
        case nil:
            throw error("\(path) (\"\(name)\") needs \"condition\" (or a client-template \"expression\")")
        }
    }

    /// Reads a one-of condition object. When several kinds are present, the first in the Admin SDK's
    /// order wins (or, and, true, false, percent, customSignal), as it does there.
    func condition(_ json: JSONValue, path: String) throws(DocumentError) -> TemplateCondition {
        guard let members = json.objectMembers else { throw error("\(path) must be an object, got \(json.typeName)") }
        if let or = present(json["orCondition"]) {
            return .or(try conditions(in: or, path: path + ".orCondition"))
        }
        if let and = present(json["andCondition"]) {
            return .and(try conditions(in: and, path: path + ".andCondition"))
        }
        if present(json["true"]) != nil { return .true }
        if present(json["false"]) != nil { return .false }
        if let percent = present(json["percent"]) {
            return .percent(try self.percent(percent, path: path + ".percent"))
        }
        if let signal = present(json["customSignal"]) {
            return .customSignal(try customSignal(signal, path: path + ".customSignal"))
        }
        return .unknown(members: members.map(\.key))
    }

    private func conditions(in json: JSONValue, path: String) throws(DocumentError) -> [TemplateCondition] {
        guard json.objectMembers != nil else { throw error("\(path) must be an object, got \(json.typeName)") }
        guard let list = present(json["conditions"]) else { return [] }
        guard case let .array(items) = list else {
            throw error("\(path).conditions must be an array, got \(list.typeName)")
        }
        var result: [TemplateCondition] = []
        result.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            result.append(try condition(item, path: "\(path).conditions[\(index)]"))
        }
        return result
    }

    private func percent(_ json: JSONValue, path: String) throws(DocumentError) -> PercentCondition {
        guard json.objectMembers != nil else { throw error("\(path) must be an object, got \(json.typeName)") }
        let percentOperator: PercentCondition.Operator =
            switch try string(json["percentOperator"], path: path + ".percentOperator") {
            case nil, "UNKNOWN": .unspecified
            case "LESS_OR_EQUAL": .lessOrEqual
            case "GREATER_THAN": .greaterThan
            case "BETWEEN": .between
            case let name?: .unrecognized(name)
            }
        var lower = 0.0
        var upper = 0.0
        if let range = present(json["microPercentRange"]) {
            let rangePath = path + ".microPercentRange"
            guard range.objectMembers != nil else {
                throw error("\(rangePath) must be an object, got \(range.typeName)")
            }
            lower = try number(range["microPercentLowerBound"], path: rangePath + ".microPercentLowerBound")
            upper = try number(range["microPercentUpperBound"], path: rangePath + ".microPercentUpperBound")
        }
        return PercentCondition(
            percentOperator: percentOperator,
            seed: try string(json["seed"], path: path + ".seed") ?? "",
            microPercent: try number(json["microPercent"], path: path + ".microPercent"),
            microPercentLowerBound: lower,
            microPercentUpperBound: upper)
    }

    private func customSignal(_ json: JSONValue, path: String) throws(DocumentError) -> CustomSignalCondition {
        guard json.objectMembers != nil else { throw error("\(path) must be an object, got \(json.typeName)") }
        let operatorName = try string(json["customSignalOperator"], path: path + ".customSignalOperator")
        var targets: [String] = []
        if let list = present(json["targetCustomSignalValues"]) {
            guard case let .array(items) = list else {
                throw error("\(path).targetCustomSignalValues must be an array of strings, got \(list.typeName)")
            }
            for (index, item) in items.enumerated() {
                guard case let .string(target) = item else {
                    throw error("\(path).targetCustomSignalValues[\(index)] must be a string, got \(item.typeName)")
                }
                targets.append(target)
            }
        }
        return CustomSignalCondition(
            customSignalOperator: operatorName.map(CustomSignalCondition.Operator.init(name:)) ?? .unspecified,
            customSignalKey: try string(json["customSignalKey"], path: path + ".customSignalKey") ?? "",
            targetCustomSignalValues: targets)
    }

    /// A JSON null reads as an absent field (proto3 JSON writes unset fields either way).
    private func present(_ value: JSONValue?) -> JSONValue? {
        if case .null? = value { nil } else { value }
    }

    private func string(_ value: JSONValue?, path: String) throws(DocumentError) -> String? {
        switch present(value) {
        case nil: return nil
        case let .string(s)?: return s
        case let other?: throw error("\(path) must be a string, got \(other.typeName)")
        }
    }

    /// Micro-percent values: JSON numbers, or decimal integers in a string (proto3 JSON may quote
    /// integers). Absent is 0, as in the Admin SDK.
    private func number(_ value: JSONValue?, path: String) throws(DocumentError) -> Double {
        switch present(value) {
        case nil: return 0
        case let .integer(i)?: return Double(i)
        case let .double(d)?: return d
        case let .string(s)?:
            if let i = Int64(s) { return Double(i) }
            throw error("\(path) must be a number, got \(JSONValue.string(s).compactText)")
        case let other?: throw error("\(path) must be a number, got \(other.typeName)")
        }
    }
}
