import RCCore

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
        var changes = ChangeList(kind: .parameter)
        for (key, place, parameter) in after {
            guard let previous = beforeByKey[ByteKey(key)] else {
                var words = "added to \(place), default value \(defaultText(parameter["defaultValue"]))"
                let conditions = parameter["conditionalValues"]?.objectMembers?.map(\.key) ?? []
                if !conditions.isEmpty {
                    words += ", values for conditions " + conditions.map(TemplateText.quoted).joined(separator: ", ")
                }
                changes.add(key, nil, nil, parameter, words)
                continue
            }
            if previous.place != place {
                changes.add(
                    key, "group", groupName(previous.place), groupName(place),
                    "moved from \(previous.place) to \(place)")
            }
            let a = previous.parameter
            let b = parameter
            if a["defaultValue"] != b["defaultValue"] {
                changes.add(
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
                changes.add(key, "conditionalValues.\(name)", x, y, words)
            }
            changes.compare(key, "valueType", a, b, as: "value type") { wordText($0, absent: "(unset, STRING)") }
            changes.compare(key, "description", a, b, as: "description", stringText)
            // Members this tool does not know (fields Google adds later) are still compared, as JSON.
            changes.compareOthers(key, a, b, except: ["defaultValue", "conditionalValues", "valueType", "description"])
        }
        // Removals come after the additions and changes of the new template; the final sort orders by key.
        for (key, place, parameter) in before where !afterKeys.contains(ByteKey(key)) {
            changes.add(
                key, nil, parameter, nil,
                "removed from \(place) (default value was \(defaultText(parameter["defaultValue"])))")
        }
        return changes.changes
    }

    private static func groupName(_ place: ParameterPlace) -> JSONValue {
        if case let .group(name) = place { .string(name) } else { .null }
    }

    // MARK: - Conditions

    private static func conditionChanges(from old: JSONValue, to new: JSONValue) -> [TemplateChange] {
        let before = conditions(in: old)
        let after = conditions(in: new)
        var changes = ChangeList(kind: .condition)
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
                changes.add(
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
                changes.add(
                    name, "priority", .integer(Int64(previous.position + 1)), .integer(Int64(position + 1)),
                    "priority \(previous.position + 1) -> \(position + 1), \(neighbour)")
            }
            let a = previous.condition
            changes.compare(name, "expression", a, condition, as: "expression", stringText)
            changes.compare(name, "tagColor", a, condition, as: "tag color") { wordText($0, absent: "(none)") }
            changes.compareOthers(name, a, condition, except: ["name", "expression", "tagColor"])
        }
        for (position, name, condition) in before where !afterNameSet.contains(ByteKey(name)) {
            changes.add(
                name, nil, condition, nil,
                "removed (was priority \(position + 1), expression \(stringText(condition["expression"])))")
        }
        return changes.changes
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
        var changes = ChangeList(kind: .group)
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
                changes.add(name, nil, nil, withoutParameters(group), words)
                continue
            }
            changes.compare(name, "description", previous, group, as: "description", stringText)
            changes.compareOthers(name, previous, group, except: ["description", "parameters"])
        }
        for (name, group) in before where !afterNames.contains(ByteKey(name)) {
            changes.add(name, nil, withoutParameters(group), nil, "removed")
        }
        return changes.changes
    }

    // MARK: - Helpers

    /// The changes of one kind, each line naming the kind and the quoted key (`condition "beta": ...`).
    private struct ChangeList {
        let kind: TemplateChange.Kind
        var changes: [TemplateChange] = []

        mutating func add(_ key: String, _ field: String?, _ old: JSONValue?, _ new: JSONValue?, _ words: String) {
            changes.append(
                TemplateChange(
                    kind: kind, key: key, field: field, old: old, new: new,
                    text: "\(kind.rawValue) \(TemplateText.quoted(key)): \(words)"))
        }

        /// `<label> <old> -> <new>` when member `field` of `a` and `b` differs, each side shown by `text`.
        mutating func compare(
            _ key: String, _ field: String, _ a: JSONValue, _ b: JSONValue, as label: String,
            _ text: (JSONValue?) -> String
        ) {
            guard a[field] != b[field] else { return }
            add(key, field, a[field], b[field], "\(label) \(text(a[field])) -> \(text(b[field]))")
        }

        /// The members other than `known` that differ, as JSON, named as they are.
        mutating func compareOthers(_ key: String, _ a: JSONValue, _ b: JSONValue, except known: Set<ByteKey>) {
            for (field, x, y) in TemplateDiff.otherFields(a, b, except: known) {
                add(
                    key, field, x, y,
                    "\(TextEscaping.terminal(field)) \(TemplateDiff.jsonText(x)) -> \(TemplateDiff.jsonText(y))")
            }
        }
    }

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
