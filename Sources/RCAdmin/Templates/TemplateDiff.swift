import RCCore

/// One difference between two templates, for `rcadmin template diff`: a condition, group or
/// parameter added, removed, or one field of it changed.
public struct TemplateChange: Sendable, Equatable {
    /// What changed; the raw values sort the output (conditions, then groups, then parameters).
    public enum Kind: String, Sendable, Comparable {
        case condition, group, parameter

        public static func < (a: Kind, b: Kind) -> Bool { a.rawValue < b.rawValue }
    }

    public let kind: Kind
    /// The condition name, group name or parameter key.
    public let key: String
    /// The field that changed (`defaultValue`, `conditionalValues.<condition>`, `valueType`,
    /// `description`, `group`, `expression`, `priority`, `tagColor`, ...); `nil` when the whole
    /// condition, group or parameter was added or removed.
    public let field: String?
    /// The values before and after, as they are in the templates (`nil`: absent).
    public let old: JSONValue?
    public let new: JSONValue?
    /// The change in words, one line, values escaped for a terminal and long ones elided.
    public let text: String

    /// `{"kind", "key", "field", "old", "new"}`, absent values as null: the `--json` form.
    public var json: JSONValue {
        .object([
            ("kind", .string(kind.rawValue)), ("key", .string(key)), ("field", field.map { .string($0) } ?? .null),
            ("old", old ?? .null), ("new", new ?? .null),
        ])
    }
}

/// The differences between two Remote Config templates in words a reviewer reads: what a publish
/// would change for devices. The `version` metadata (number, time, user) and an `etag` are not
/// compared: two files of the same template taken at different times show no differences.
public enum TemplateDiff {
    /// Every change from `old` to `new`, sorted by kind, then key; a key's changes in field order.
    public static func changes(from old: JSONValue, to new: JSONValue) -> [TemplateChange] {
        var changes: [TemplateChange] = []
        changes += conditionChanges(from: old, to: new)
        changes += groupChanges(from: old, to: new)
        changes += parameterChanges(from: old, to: new)
        return changes.enumerated().sorted { a, b in
            if a.element.kind != b.element.kind { return a.element.kind < b.element.kind }
            if !a.element.key.sameBytes(as: b.element.key) { return a.element.key.precedesByBytes(b.element.key) }
            return a.offset < b.offset
        }.map(\.element)
    }

    /// The changes as text, one line each, or `no differences`; ends with a newline.
    public static func text(_ changes: [TemplateChange]) -> String {
        changes.isEmpty ? "no differences\n" : changes.map { $0.text + "\n" }.joined()
    }

    /// The changes as a JSON array of ``TemplateChange/json``.
    public static func json(_ changes: [TemplateChange]) -> JSONValue { .array(changes.map(\.json)) }

    // MARK: - Parameters

    /// Parameters are matched by key wherever they live: keys are unique across a template, so a key
    /// that left one group for another (or for the top level) is a move, not a removal and an addition.
    private static func parameterChanges(from old: JSONValue, to new: JSONValue) -> [TemplateChange] {
        let before = ParameterLookup.all(in: old)
        let after = ParameterLookup.all(in: new)
        // By bytes: a look-alike key (U+212A for K) is another parameter, as the server keeps it.
        let beforeByKey = Dictionary(before.map { (ByteKey($0.key), $0) }, uniquingKeysWith: { first, _ in first })
        let afterKeys = Set(after.map { ByteKey($0.key) })
        var changes: [TemplateChange] = []
        func change(_ key: String, _ field: String?, _ old: JSONValue?, _ new: JSONValue?, _ words: String) {
            changes.append(
                TemplateChange(
                    kind: .parameter, key: key, field: field, old: old, new: new,
                    text: "parameter \(TemplateText.quoted(key)): \(words)"))
        }
        for (key, place, parameter) in after {
            guard let previous = beforeByKey[ByteKey(key)] else {
                var words = "added to \(place), default value \(defaultText(parameter["defaultValue"]))"
                let conditions = parameter["conditionalValues"]?.objectMembers?.map(\.key) ?? []
                if !conditions.isEmpty {
                    words += ", values for conditions " + conditions.map(TemplateText.quoted).joined(separator: ", ")
                }
                change(key, nil, nil, parameter, words)
                continue
            }
            if previous.place != place {
                change(
                    key, "group", groupName(previous.place), groupName(place),
                    "moved from \(previous.place) to \(place)")
            }
            let a = previous.parameter
            let b = parameter
            if a["defaultValue"] != b["defaultValue"] {
                change(
                    key, "defaultValue", a["defaultValue"], b["defaultValue"],
                    "default value \(transition(a["defaultValue"], b["defaultValue"]))")
            }
            let oldValues = a["conditionalValues"]?.objectMembers ?? []
            let newValues = b["conditionalValues"]?.objectMembers ?? []
            let (oldByName, newByName) = (byKey(oldValues), byKey(newValues))
            for name in orderedUnion(oldValues.map(\.key), newValues.map(\.key)) {
                let x = oldByName[ByteKey(name)]
                let y = newByName[ByteKey(name)]
                guard x != y else { continue }
                let condition = "value for condition \(TemplateText.quoted(name))"
                let words =
                    switch (x, y) {
                    case (nil, let y?): "\(condition) added: \(TemplateValueText.parameterValue(y))"
                    case (let x?, nil): "\(condition) removed (was \(TemplateValueText.parameterValue(x)))"
                    default: "\(condition): \(transition(x, y))"
                    }
                change(key, "conditionalValues.\(name)", x, y, words)
            }
            if a["valueType"] != b["valueType"] {
                change(
                    key, "valueType", a["valueType"], b["valueType"],
                    "value type \(wordText(a["valueType"], absent: "(unset, STRING)")) -> "
                        + wordText(b["valueType"], absent: "(unset, STRING)"))
            }
            if a["description"] != b["description"] {
                change(
                    key, "description", a["description"], b["description"],
                    "description \(stringText(a["description"])) -> \(stringText(b["description"]))")
            }
            // Members this tool does not know (fields Google adds later) are still compared, as JSON.
            let known: Set<ByteKey> = ["defaultValue", "conditionalValues", "valueType", "description"]
            for (field, x, y) in otherFields(a, b, except: known) {
                change(key, field, x, y, "\(TextEscaping.terminal(field)) \(jsonText(x)) -> \(jsonText(y))")
            }
        }
        // Removals come after the additions and changes of the new template; the final sort orders by key.
        for (key, place, parameter) in before where !afterKeys.contains(ByteKey(key)) {
            change(
                key, nil, parameter, nil,
                "removed from \(place) (default value was \(defaultText(parameter["defaultValue"])))")
        }
        return changes
    }

    private static func groupName(_ place: ParameterPlace) -> JSONValue {
        if case let .group(name) = place { .string(name) } else { .null }
    }

    // MARK: - Conditions

    private static func conditionChanges(from old: JSONValue, to new: JSONValue) -> [TemplateChange] {
        let before = conditions(in: old)
        let after = conditions(in: new)
        var changes: [TemplateChange] = []
        func change(_ key: String, _ field: String?, _ old: JSONValue?, _ new: JSONValue?, _ words: String) {
            changes.append(
                TemplateChange(
                    kind: .condition, key: key, field: field, old: old, new: new,
                    text: "condition \(TemplateText.quoted(key)): \(words)"))
        }
        // Names by their bytes, as the server keeps them: a look-alike name is another condition.
        let beforeNames = before.map { ByteKey($0.name) }
        let afterNames = after.map { ByteKey($0.name) }
        // Priority is the position in the list, but a condition added at the top moves every other
        // one down without changing which wins over which: report only changes of relative order.
        let common = Set(beforeNames).intersection(afterNames)
        let oldRank = Dictionary(
            beforeNames.filter(common.contains).enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        let commonAfter = afterNames.filter(common.contains)
        let newRank = Dictionary(commonAfter.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        // Looked up by name, not searched: a template may hold thousands of conditions.
        let beforeByName = Dictionary(before.map { (ByteKey($0.name), $0) }, uniquingKeysWith: { first, _ in first })
        let afterNameSet = Set(afterNames)
        for (position, name, condition) in after {
            let key = ByteKey(name)
            guard let previous = beforeByName[key] else {
                change(
                    name, nil, nil, condition,
                    "added at priority \(position + 1), expression \(stringText(condition["expression"]))")
                continue
            }
            if let rank = newRank[key], oldRank[key] != rank {
                // Name the neighbour it now follows (or precedes): that is what decides which value wins.
                let neighbour =
                    rank > 0
                    ? "now after \(TemplateText.quoted(commonAfter[rank - 1].text))"
                    : "now before \(TemplateText.quoted(commonAfter[1].text))"
                change(
                    name, "priority", .integer(Int64(previous.position + 1)), .integer(Int64(position + 1)),
                    "priority \(previous.position + 1) -> \(position + 1), \(neighbour)")
            }
            let a = previous.condition
            if a["expression"] != condition["expression"] {
                change(
                    name, "expression", a["expression"], condition["expression"],
                    "expression \(stringText(a["expression"])) -> \(stringText(condition["expression"]))")
            }
            if a["tagColor"] != condition["tagColor"] {
                change(
                    name, "tagColor", a["tagColor"], condition["tagColor"],
                    "tag color \(wordText(a["tagColor"], absent: "(none)")) -> "
                        + wordText(condition["tagColor"], absent: "(none)"))
            }
            for (field, x, y) in otherFields(a, condition, except: ["name", "expression", "tagColor"]) {
                change(name, field, x, y, "\(TextEscaping.terminal(field)) \(jsonText(x)) -> \(jsonText(y))")
            }
        }
        for (position, name, condition) in before where !afterNameSet.contains(ByteKey(name)) {
            change(
                name, nil, condition, nil,
                "removed (was priority \(position + 1), expression \(stringText(condition["expression"])))")
        }
        return changes
    }

    /// The named conditions with their 0-based positions; an unnamed or repeated one is skipped (the
    /// server refuses such a template, and the file reader already names it).
    private static func conditions(in template: JSONValue) -> [(position: Int, name: String, condition: JSONValue)] {
        guard case let .array(items)? = template["conditions"] else { return [] }
        var seen = Set<ByteKey>()
        return items.enumerated().compactMap { index, condition in
            guard let name = condition["name"]?.stringValue, seen.insert(ByteKey(name)).inserted else { return nil }
            return (index, name, condition)
        }
    }

    // MARK: - Groups

    private static func groupChanges(from old: JSONValue, to new: JSONValue) -> [TemplateChange] {
        let before = old["parameterGroups"]?.objectMembers ?? []
        let after = new["parameterGroups"]?.objectMembers ?? []
        var changes: [TemplateChange] = []
        func change(_ key: String, _ field: String?, _ old: JSONValue?, _ new: JSONValue?, _ words: String) {
            changes.append(
                TemplateChange(
                    kind: .group, key: key, field: field, old: old, new: new,
                    text: "group \(TemplateText.quoted(key)): \(words)"))
        }
        // Parameters moving in or out of a group are reported on the parameters themselves.
        func withoutParameters(_ group: JSONValue) -> JSONValue {
            .object((group.objectMembers ?? []).filter { $0.key != "parameters" })
        }
        let beforeByName = byKey(before)
        let afterNames = Set(after.map { ByteKey($0.key) })
        for (name, group) in after {
            guard let previous = beforeByName[ByteKey(name)] else {
                let count = group["parameters"]?.objectMembers?.count ?? 0
                var words = "added with \(count) parameter\(count == 1 ? "" : "s")"
                if let description = group["description"] { words += ", description \(stringText(description))" }
                change(name, nil, nil, withoutParameters(group), words)
                continue
            }
            if previous["description"] != group["description"] {
                change(
                    name, "description", previous["description"], group["description"],
                    "description \(stringText(previous["description"])) -> \(stringText(group["description"]))")
            }
            for (field, x, y) in otherFields(previous, group, except: ["description", "parameters"]) {
                change(name, field, x, y, "\(TextEscaping.terminal(field)) \(jsonText(x)) -> \(jsonText(y))")
            }
        }
        for (name, group) in before where !afterNames.contains(ByteKey(name)) {
            change(name, nil, withoutParameters(group), nil, "removed")
        }
        return changes
    }

    // MARK: - Helpers

    /// Members of `a` or `b` other than `known` whose values differ, in first-seen order, with
    /// their values on each side (looked up by name: an object may have thousands of members).
    private static func otherFields(_ a: JSONValue, _ b: JSONValue, except known: Set<ByteKey>) -> [(
        field: String, old: JSONValue?, new: JSONValue?
    )] {
        let (x, y) = (a.objectMembers ?? [], b.objectMembers ?? [])
        let (old, new) = (byKey(x), byKey(y))
        return orderedUnion(x.map(\.key), y.map(\.key)).compactMap { field in
            let key = ByteKey(field)
            return known.contains(key) || old[key] == new[key] ? nil : (field, old[key], new[key])
        }
    }

    /// An object's members by name (by bytes, as everywhere names from a file or a server are
    /// compared), the first of a repeated name winning (as `JSONValue`'s subscript does).
    private static func byKey(_ members: [(key: String, value: JSONValue)]) -> [ByteKey: JSONValue] {
        Dictionary(members.map { (ByteKey($0.key), $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    private static func orderedUnion(_ a: [String], _ b: [String]) -> [String] {
        var seen = Set<ByteKey>()
        return (a + b).filter { seen.insert(ByteKey($0)).inserted }
    }

    /// `old -> new` for two parameter values; when they only differ in JSON formatting (spaces,
    /// member order) both sides would read the same, so the line says so.
    private static func transition(_ old: JSONValue?, _ new: JSONValue?) -> String {
        let (a, b) = (defaultText(old), defaultText(new))
        guard a == b else { return "\(a) -> \(b)" }
        if let x = old?["value"]?.stringValue, let y = new?["value"]?.stringValue,
            let p = try? JSONValue.parse(x), let q = try? JSONValue.parse(y), p == q
        {
            return "\(a) -> \(b) (same JSON, formatted differently)"
        }
        return "\(a) -> \(b) (differs in the elided part)"
    }

    private static func defaultText(_ value: JSONValue?) -> String {
        value.map(TemplateValueText.parameterValue) ?? "(none)"
    }

    /// Free text (expressions, descriptions) quoted, so leading and trailing spaces are visible.
    private static func stringText(_ value: JSONValue?) -> String {
        guard let value else { return "(none)" }
        if case let .string(s) = value { return TemplateText.quoted(TemplateText.elided(s)) }
        return jsonText(value)
    }

    /// Enum-like values (`JSON`, `BLUE`) as bare words when they are plain identifiers.
    private static func wordText(_ value: JSONValue?, absent: String) -> String {
        guard let value else { return absent }
        if case let .string(s) = value, !s.isEmpty,
            s.unicodeScalars.allSatisfy({ ($0.properties.isAlphabetic && $0.isASCII) || $0 == "_" })
        {
            return s
        }
        return stringText(value)
    }

    private static func jsonText(_ value: JSONValue?) -> String {
        value.map { TextEscaping.terminal(TemplateText.elided($0.compactText)) } ?? "(none)"
    }
}

/// How parameter values are shown to a reviewer.
public enum TemplateValueText {
    /// A `RemoteConfigParameterValue`: a static value as the text (JSON objects and arrays compact,
    /// other text quoted), `useInAppDefault` in words, managed values (rollouts, personalization)
    /// as their compact JSON; long values elided in the middle with their length.
    public static func parameterValue(_ value: JSONValue) -> String {
        if let members = value.objectMembers, members.count == 1 {
            switch (members[0].key, members[0].value) {
            case let ("value", .string(text)): return staticValue(text)
            case ("useInAppDefault", .bool(true)): return "(use in-app default)"
            default: break
            }
        }
        return TextEscaping.terminal(TemplateText.elided(value.compactText))
    }

    /// A static value: JSON objects and arrays compacted (the console's line breaks and spacing are
    /// not something a reviewer needs to read; member order is kept as written), anything else as a
    /// quoted string.
    public static func staticValue(_ text: String) -> String {
        if let first = text.utf8.first(where: { !isJSONSpace($0) }),
            first == UInt8(ascii: "{") || first == UInt8(ascii: "["),
            (try? JSONValue.parse(text)) != nil
        {
            return TextEscaping.terminal(TemplateText.elided(compacted(text)))
        }
        return TemplateText.quoted(TemplateText.elided(text))
    }

    /// Valid JSON `text` without the white space between tokens. Not a re-serialization: the parser
    /// sorts object members, and a reviewer should see them in the order the value has them.
    static func compacted(_ text: String) -> String {
        var out: [UInt8] = []
        var strings = JSONStringTracker()
        for byte in text.utf8 {
            if !strings.take(byte) && isJSONSpace(byte) { continue }
            out.append(byte)
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func isJSONSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }
}
