import RCCore

/// Where a parameter lives in a template: the top-level `parameters` or a parameter group's.
public enum ParameterPlace: Sendable, Equatable, Hashable, CustomStringConvertible {
    case topLevel
    case group(String)

    public var description: String {
        switch self {
        case .topLevel: "the top-level parameters"
        case let .group(name): "parameter group \(TemplateText.quoted(name))"
        }
    }
}

/// The heart of `rcadmin set-update`: puts one update offer into a template's
/// `<platform>_<kind>_update` parameter and changes nothing else.
///
/// The seed's CI scripts replaced the whole parameter (losing its conditional values, value type and
/// description), created a second top-level key when the parameter lived in a group, and crashed
/// on a template without `parameters`. Here only `defaultValue` is replaced, wherever the parameter
/// is; everything else in the template stays as it was, member for member. Applying the same edit
/// again reports no change, which is what lets `set-update` re-apply it after a stale ETag.
public struct UpdateKeyEdit: Sendable, Equatable {
    public let kind: UpdateKind
    public let platform: UpdatePlatform
    public let version: String
    public let download: String
    /// The deadline as written into the value: UTC, `YYYY-MM-DDTHH:MM:SS[.mmm]Z`.
    public let deadline: String?
    public let message: String?

    /// The longest message accepted, in Unicode scalars: it is shown on one line of a device's
    /// notification or log, and Remote Config counts every value toward the template's size limit.
    public static let maximumMessageLength = 200

    /// Validates every field (errors name the field and the escaped value):
    /// - `version` by ``UpdatePlatform/validateVersion(_:linuxScheme:)``;
    /// - `download` an absolute `https://` URL with a host and no spaces or control characters
    ///   (`http://` only with `allowInsecure`, for tests and labs: the device downloads and installs
    ///   what it names);
    /// - `deadline` ISO 8601 as the device reads it, normalised to UTC so every reader agrees;
    /// - `message` one line of at most ``maximumMessageLength`` scalars, no control characters.
    public init(
        kind: UpdateKind, platform: UpdatePlatform, version: String, download: String, deadline: String? = nil,
        message: String? = nil, linuxScheme: VersionScheme = .dotted, allowInsecure: Bool = false
    ) throws(TemplateError) {
        try platform.validateVersion(version, linuxScheme: linuxScheme)
        try Self.validateDownload(download, allowInsecure: allowInsecure)
        self.kind = kind
        self.platform = platform
        self.version = version
        self.download = download
        self.deadline = try deadline.map { (text) throws(TemplateError) in try Self.normalisedDeadline(text) }
        if let message {
            guard !message.isEmpty else { throw TemplateError.invalid("message", message, "is empty (leave it out)") }
            guard !TemplateText.hasControlCharacters(message) else {
                throw TemplateError.invalid("message", message, "must be one line without control characters")
            }
            let length = message.unicodeScalars.count
            guard length <= Self.maximumMessageLength else {
                throw TemplateError.invalid(
                    "message", TemplateText.elided(message, limit: 60),
                    "is \(length) characters long, at most \(Self.maximumMessageLength) are allowed")
            }
        }
        self.message = message
    }

    /// The parameter key this edit writes.
    public var key: String { platform.key(for: kind) }

    /// The parameter's new `defaultValue.value`: compact JSON with `version`, `download`, then
    /// `deadline` and `message` when given, in that order, as the device's `UpdateOffer` reads it.
    public var valueText: String {
        var members: [(key: String, value: JSONValue)] = [
            ("version", .string(version)), ("download", .string(download)),
        ]
        if let deadline { members.append(("deadline", .string(deadline))) }
        if let message { members.append(("message", .string(message))) }
        return JSONValue.object(members).compactText
    }

    /// The template with the offer in place, and what changed.
    public func apply(to template: JSONValue) throws(TemplateError) -> UpdateKeyEditResult {
        // The value must read back on the device exactly as validated here.
        do {
            guard try UpdateOffer.parse(valueText, key: key) != nil else { throw UpdateCheckError("empty value") }
        } catch { throw TemplateError("\(key): the new value does not read back: \(error)") }
        guard var top = template.objectMembers else {
            throw TemplateError("template: expected a JSON object, got \(template.typeName)")
        }
        try TemplateShape.check(template, place: "template")
        let places = ParameterLookup.places(of: key, in: template)
        if places.count > 1 {
            throw TemplateError(
                "parameter \(TemplateText.quoted(key)) is in both \(places[0]) and \(places[1]): keys must be unique "
                    + "across a template, remove one of them first")
        }
        let place = places.first ?? .topLevel
        var parameters: [(key: String, value: JSONValue)]
        switch place {
        case .topLevel: parameters = template["parameters"]?.objectMembers ?? []
        case let .group(name): parameters = template["parameterGroups"]?[name]?["parameters"]?.objectMembers ?? []
        }
        let newDefault = JSONValue.object([("value", .string(valueText))])
        var result = UpdateKeyEditResult(
            template: template, key: key, place: place, outcome: .unchanged, previousDefault: nil,
            replacedManagedValue: nil, conditionalValues: [], valueText: valueText)

        if let index = parameters.firstIndex(where: { $0.key.sameBytes(as: key) }) {
            guard var parameter = parameters[index].value.objectMembers else {
                throw TemplateError("parameter \(TemplateText.quoted(key)) in \(place) is not a JSON object")
            }
            if let valueType = parameters[index].value["valueType"] {
                guard case let .string(type) = valueType, ["JSON", "STRING"].contains(type) else {
                    throw TemplateError.invalid(
                        "parameter \(TemplateText.quoted(key)) valueType",
                        valueType.stringValue ?? valueType.compactText,
                        "cannot hold the update's JSON value (JSON or STRING can; change it first)")
                }
            }
            let previous = parameters[index].value["defaultValue"]
            result.previousDefault = previous
            result.conditionalValues = parameters[index].value["conditionalValues"]?.objectMembers?.map(\.key) ?? []
            if previous == newDefault { return result }
            result.outcome = .updated
            if let managed = previous?.objectMembers?.first(where: { !$0.key.sameBytes(as: "value") }) {
                result.replacedManagedValue = managed.key
            }
            Members.set("defaultValue", newDefault, in: &parameter)
            parameters[index].value = .object(parameter)
        } else {
            // A new parameter says what it holds, so the console shows and validates it as JSON.
            result.outcome = .added
            Members.set(key, .object([("defaultValue", newDefault), ("valueType", .string("JSON"))]), in: &parameters)
        }

        switch place {
        case .topLevel:
            Members.set("parameters", .object(parameters), in: &top)
        case let .group(name):
            // The lookup found the key in this group, so the group and its parameters are objects.
            guard var groups = template["parameterGroups"]?.objectMembers,
                let groupIndex = groups.firstIndex(where: { $0.key.sameBytes(as: name) }),
                var group = groups[groupIndex].value.objectMembers
            else { throw TemplateError("parameter group \(TemplateText.quoted(name)) is not a JSON object") }
            Members.set("parameters", .object(parameters), in: &group)
            groups[groupIndex].value = .object(group)
            Members.set("parameterGroups", .object(groups), in: &top)
        }
        result.template = .object(top)
        return result
    }

    static func validateDownload(_ url: String, allowInsecure: Bool) throws(TemplateError) {
        guard !url.isEmpty else { throw TemplateError.invalid("download", url, "is empty") }
        guard !url.unicodeScalars.contains(where: { $0.properties.isWhitespace || TextEscaping.needsEscaping($0) })
        else {
            throw TemplateError.invalid("download", url, "must not contain spaces or control characters")
        }
        let lower = url.lowercased()
        let rest: Substring
        if lower.hasPrefix("https://") {
            rest = url.dropFirst(8)
        } else if lower.hasPrefix("http://") {
            guard allowInsecure else {
                throw TemplateError.invalid(
                    "download", url, "must be an https:// URL (devices download and install what it names)")
            }
            rest = url.dropFirst(7)
        } else {
            throw TemplateError.invalid("download", url, "must be an absolute https:// URL")
        }
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let host = authority.split(separator: "@", omittingEmptySubsequences: false).last ?? ""
        guard !host.isEmpty, !host.hasPrefix(":") else { throw TemplateError.invalid("download", url, "has no host") }
    }

    static func normalisedDeadline(_ text: String) throws(TemplateError) -> String {
        guard let time = Timestamp(iso8601: text) else {
            throw TemplateError.invalid(
                "deadline", text, "is not an ISO 8601 time (e.g. 2027-01-31T00:00:00Z or 2027-01-31T09:00:00+09:00)")
        }
        let millis = time.milliseconds - time.milliseconds / 1_000 * 1_000
        guard millis != 0 else { return time.iso8601 }
        // Keep a fraction that was given rather than silently moving the deadline.
        let fraction = String(millis < 0 ? millis + 1_000 : millis)
        let whole = time.iso8601.dropLast()
        return "\(whole).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)Z"
    }
}

/// The result of ``UpdateKeyEdit/apply(to:)``: the new template and what happened to the key.
public struct UpdateKeyEditResult: Sendable, Equatable {
    public enum Outcome: String, Sendable {
        /// The parameter already had exactly this default value: the template is returned as given.
        case unchanged
        /// The parameter did not exist and was created at the top level with valueType JSON.
        case added
        /// The parameter's default value was replaced; everything else about it was kept.
        case updated
    }

    public var template: JSONValue
    public let key: String
    public let place: ParameterPlace
    public var outcome: Outcome
    /// The parameter's `defaultValue` before the edit (`nil`: it had none, or did not exist).
    public var previousDefault: JSONValue?
    /// The kind of managed default the edit replaced with a static value (`useInAppDefault`,
    /// `rolloutValue`, `personalizationValue`, ...): the operator must hear that a rollout ended.
    public var replacedManagedValue: String?
    /// The conditions with their own value for this parameter, kept as they were: devices matching
    /// one of them keep getting that value instead of the new default.
    public var conditionalValues: [String]
    public let valueText: String

    public var changed: Bool { outcome != .unchanged }

    /// One line for the operator, values escaped for the terminal.
    public var summary: String {
        let name = TemplateText.quoted(key)
        let new = TemplateText.elided(TextEscaping.terminal(valueText))
        switch outcome {
        case .unchanged:
            return "no change: \(name) in \(place) already has this value"
        case .added:
            return "added \(name) to \(place) (valueType JSON): \(new)"
        case .updated:
            let old = previousDefault.map { TemplateValueText.parameterValue($0) } ?? "(no default value)"
            var line = "updated \(name) in \(place): default value \(old) -> \(new)"
            if let managed = replacedManagedValue {
                line += " (replaces the \(TextEscaping.terminal(managed)) default with a static value)"
            }
            if !conditionalValues.isEmpty {
                line +=
                    "; devices matching "
                    + conditionalValues.map(TemplateText.quoted).joined(separator: ", ")
                    + " keep their conditional value"
            }
            return line
        }
    }

    public static func == (a: UpdateKeyEditResult, b: UpdateKeyEditResult) -> Bool {
        a.template == b.template && a.key == b.key && a.place == b.place && a.outcome == b.outcome
            && a.previousDefault == b.previousDefault && a.replacedManagedValue == b.replacedManagedValue
            && a.conditionalValues == b.conditionalValues && a.valueText == b.valueText
    }
}

/// Finding parameters wherever a template keeps them.
enum ParameterLookup {
    /// Every place `key` appears: the top level first, then groups in template order.
    static func places(of key: String, in template: JSONValue) -> [ParameterPlace] {
        var places: [ParameterPlace] = []
        if template["parameters"]?[key] != nil { places.append(.topLevel) }
        for (name, group) in template["parameterGroups"]?.objectMembers ?? [] where group["parameters"]?[key] != nil {
            places.append(.group(name))
        }
        return places
    }

    /// Every parameter with its place, the top level first; a key found twice keeps its first place.
    static func all(in template: JSONValue) -> [(key: String, place: ParameterPlace, parameter: JSONValue)] {
        var found: [(key: String, place: ParameterPlace, parameter: JSONValue)] = []
        var seen = Set<ByteKey>()
        for (key, parameter) in template["parameters"]?.objectMembers ?? [] where seen.insert(ByteKey(key)).inserted {
            found.append((key, .topLevel, parameter))
        }
        for (name, group) in template["parameterGroups"]?.objectMembers ?? [] {
            for (key, parameter) in group["parameters"]?.objectMembers ?? [] where seen.insert(ByteKey(key)).inserted {
                found.append((key, .group(name), parameter))
            }
        }
        return found
    }
}

/// Editing an object's members in place while keeping their order.
enum Members {
    /// Replaces the member named `key`, or inserts it before the first member that sorts after it,
    /// so an object read from JSON (members sorted) stays sorted.
    static func set(_ key: String, _ value: JSONValue, in members: inout [(key: String, value: JSONValue)]) {
        if let index = members.firstIndex(where: { $0.key.sameBytes(as: key) }) {
            members[index].value = value
        } else {
            members.insert((key, value), at: members.firstIndex { key.precedesByBytes($0.key) } ?? members.endIndex)
        }
    }
}
