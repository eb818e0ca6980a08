import RCAdmin
import RCCore
import TestSupport
import Testing

/// `template diff`: what a publish changes, one line per change, in words.
@Suite struct TemplateDiffTests {
    func diff(_ old: JSONValue, _ new: JSONValue) -> String {
        TemplateDiff.text(TemplateDiff.changes(from: old, to: new))
    }

    func template(_ text: String) throws -> JSONValue { try JSONValue.parse(text) }

    /// A diff costs time linear in the templates' size, whatever their shape: a hostile file (or a
    /// broken server) with thousands of conditions, groups, conditional values or unknown fields
    /// must not stall the tool. Each case changes every item, so every one is looked up in the other
    /// template; a quadratic lookup took minutes here, linear ones take well under a second. The
    /// 60 s bound is a failure bound for the quadratic case only, not a performance figure: a loaded
    /// machine must not fail it.
    @Test(arguments: ["conditions", "groups", "conditionalValues", "fields"])
    func aDiffOfLargeTemplatesIsLinear(_ shape: String) throws {
        let count = 20_000
        func build(_ suffix: String) -> JSONValue {
            let items = (0..<count).map { index in "n\(index)" }
            switch shape {
            case "conditions":
                return .object([
                    (
                        "conditions",
                        .array(items.map { .object([("name", .string($0)), ("expression", .string("x\(suffix)"))]) })
                    )
                ])
            case "groups":
                return .object([
                    (
                        "parameterGroups",
                        .object(items.map { ($0, .object([("description", .string(suffix))])) })
                    )
                ])
            case "conditionalValues":
                let values = JSONValue.object(items.map { ($0, .object([("value", .string(suffix))])) })
                return .object([("parameters", .object([("p", .object([("conditionalValues", values)]))]))])
            default:
                let fields = items.map { ($0, JSONValue.string(suffix)) }
                return .object([("parameters", .object([("p", .object(fields))]))])
            }
        }
        let (old, new) = (build("a"), build("b"))
        let started = ContinuousClock.now
        let changes = TemplateDiff.changes(from: old, to: new)
        let took = ContinuousClock.now - started
        #expect(changes.count == count)
        #expect(took < .seconds(60), "\(count) \(shape) took \(took)")
    }

    @Test func sameTemplateOrOnlyVersionMetadataMeansNoDifferences() throws {
        let base = try TemplateFixtures.template()
        #expect(diff(base, base) == "no differences\n")
        let republished = TemplateFixtures.setting(
            ["version"],
            to: try template(#"{"versionNumber": "43", "updateType": "ROLLBACK", "rollbackSource": "41"}"#),
            in: base)
        #expect(TemplateDiff.changes(from: base, to: republished).isEmpty)
        #expect(diff(try template("{}"), try template(#"{"version": {"versionNumber": "1"}}"#)) == "no differences\n")
        #expect(TemplateDiff.json([]).compactText == "[]")
    }

    @Test func aSetUpdateReadsAsOneDefaultValueChange() throws {
        let base = try TemplateFixtures.template()
        let edited = try UpdateKeyEdit(
            kind: .required, platform: .linux, version: "1.4.0", download: "https://dl.example.com/rcagent_1.4.0.deb",
            deadline: "2027-01-31T00:00:00Z"
        ).apply(to: base).template
        #expect(
            diff(base, edited)
                == #"parameter "linux_required_update": default value "#
                + #"{"version":"1.2.0","download":"https://dl.example.com/rcagent_1.2.0.deb"} -> "#
                + #"{"version":"1.4.0","download":"https://dl.example.com/rcagent_1.4.0.deb","deadline":"2027-01-31T00:00:00Z"}"#
                + "\n")
        let json = TemplateDiff.json(TemplateDiff.changes(from: base, to: edited))
        guard case let .array(items) = json, items.count == 1 else {
            Issue.record("expected one change, got \(json.compactText)")
            return
        }
        #expect(items[0].objectMembers?.map(\.key) == ["kind", "key", "field", "old", "new"])
        #expect(items[0]["kind"] == .string("parameter"))
        #expect(items[0]["key"] == .string("linux_required_update"))
        #expect(items[0]["field"] == .string("defaultValue"))
        #expect(items[0]["old"] == base["parameters"]?["linux_required_update"]?["defaultValue"])
        #expect(items[0]["new"] == edited["parameters"]?["linux_required_update"]?["defaultValue"])
    }

    @Test func parameterChangesInWords() throws {
        let old = try template(
            #"""
            {"conditions": [{"name": "beta", "expression": "true"}, {"name": "ios", "expression": "device.os == 'ios'"}],
             "parameters": {
               "color": {"defaultValue": {"value": "red"}, "conditionalValues": {"beta": {"value": "blue"}, "ios": {"value": "green"}}},
               "gone": {"defaultValue": {"value": "bye"}},
               "limits": {"defaultValue": {"value": "{\"a\": 1, \"b\": [1, 2]}"}, "valueType": "STRING", "description": "Limits"},
               "flag": {"defaultValue": {"value": "true"}}
             },
             "parameterGroups": {"ui": {"parameters": {"theme": {"defaultValue": {"value": "dark"}}}}}}
            """#)
        let new = try template(
            #"""
            {"conditions": [{"name": "beta", "expression": "true"}, {"name": "ios", "expression": "device.os == 'ios'"}],
             "parameters": {
               "color": {"defaultValue": {"value": "red"}, "conditionalValues": {"beta": {"value": "purple"}, "ios": {"useInAppDefault": true}}},
               "limits": {"defaultValue": {"value": "{\"a\":1,\"b\":[1,2]}"}, "valueType": "JSON"},
               "fresh": {"defaultValue": {"value": "hi"}, "conditionalValues": {"ios": {"value": "hey"}}},
               "theme": {"defaultValue": {"value": "dark"}}
             },
             "parameterGroups": {"ui": {"parameters": {"flag": {"defaultValue": {"value": "true"}, "conditionalValues": {"beta": {"value": "false"}}}}}}}
            """#)
        let expected = [
            #"parameter "color": value for condition "beta": "blue" -> "purple""#,
            #"parameter "color": value for condition "ios": "green" -> (use in-app default)"#,
            #"parameter "flag": moved from the top-level parameters to parameter group "ui""#,
            #"parameter "flag": value for condition "beta" added: "false""#,
            #"parameter "fresh": added to the top-level parameters, default value "hi", values for conditions "ios""#,
            #"parameter "gone": removed from the top-level parameters (default value was "bye")"#,
            #"parameter "limits": default value {"a":1,"b":[1,2]} -> {"a":1,"b":[1,2]} (same JSON, formatted differently)"#,
            #"parameter "limits": value type STRING -> JSON"#,
            #"parameter "limits": description "Limits" -> (none)"#,
            #"parameter "theme": moved from parameter group "ui" to the top-level parameters"#,
        ]
        #expect(diff(old, new) == expected.map { $0 + "\n" }.joined())
        let moved = TemplateDiff.changes(from: old, to: new).first { $0.key == "flag" && $0.field == "group" }
        #expect(moved?.old == .null)
        #expect(moved?.new == .string("ui"))
    }

    @Test func conditionChangesInWords() throws {
        let old = try template(
            #"""
            {"conditions": [
              {"name": "a", "expression": "percent <= 10", "tagColor": "BLUE"},
              {"name": "b", "expression": "device.os == 'ios'"},
              {"name": "c", "expression": "true"},
              {"name": "old", "expression": "false"}
            ]}
            """#)
        let new = try template(
            #"""
            {"conditions": [
              {"name": "top", "expression": "device.language in ['de']"},
              {"name": "b", "expression": "device.os == 'ios'"},
              {"name": "a", "expression": "percent <= 20", "tagColor": "GREEN"},
              {"name": "c", "expression": "true"}
            ]}
            """#)
        let expected = [
            #"condition "a": priority 1 -> 3, now after "b""#,
            #"condition "a": expression "percent <= 10" -> "percent <= 20""#,
            #"condition "a": tag color BLUE -> GREEN"#,
            #"condition "b": priority 2 -> 2, now before "a""#,
            #"condition "old": removed (was priority 4, expression "false")"#,
            #"condition "top": added at priority 1, expression "device.language in ['de']""#,
        ]
        #expect(diff(old, new) == expected.map { $0 + "\n" }.joined())
        // A condition added in front moves the others down without changing which wins: not a change.
        let shifted = TemplateFixtures.setting(
            ["conditions"],
            to: .array(
                [try template(#"{"name": "first", "expression": "true"}"#)]
                    + ((old["conditions"].flatMap { if case let .array(a) = $0 { a } else { nil } }) ?? [])),
            in: old)
        #expect(diff(old, shifted) == #"condition "first": added at priority 1, expression "true""# + "\n")
    }

    @Test func groupChangesInWords() throws {
        let old = try template(
            #"{"parameterGroups": {"keep": {"description": "Old words", "parameters": {}}, "drop": {"parameters": {"x": {}}}}}"#
        )
        let new = try template(
            #"{"parameterGroups": {"keep": {"description": "New words", "parameters": {}}, "add": {"description": "Fresh", "parameters": {"x": {}}}}}"#
        )
        let expected = [
            #"group "add": added with 1 parameter, description "Fresh""#,
            #"group "drop": removed"#,
            #"group "keep": description "Old words" -> "New words""#,
            #"parameter "x": moved from parameter group "drop" to parameter group "add""#,
        ]
        #expect(diff(old, new) == expected.map { $0 + "\n" }.joined())
    }

    @Test func valuesAreEscapedForTheTerminal() throws {
        let old = try template(#"{"parameters": {"motd": {"defaultValue": {"value": "plain"}}}}"#)
        let new = try template(
            #"{"parameters": {"motd": {"defaultValue": {"value": "\u001b[31mred\u001b[0m\nnext\u202eevil"}}}}"#)
        let line = diff(old, new)
        #expect(
            line == #"parameter "motd": default value "plain" -> "\u001b[31mred\u001b[0m\nnext\u{202e}evil""# + "\n")
        #expect(!line.unicodeScalars.contains { $0.value == 0x1b || $0.value == 0x202e })
        #expect(line.filter { $0 == "\n" }.count == 1)
        // Keys and condition names are escaped too.
        let odd = try template(#"{"parameters": {"a\u0007b": {"defaultValue": {"value": "1"}}}}"#)
        #expect(
            diff(try template("{}"), odd)
                == #"parameter "a\u0007b": added to the top-level parameters, default value "1""# + "\n")
    }

    @Test func longValuesAreElidedInTheMiddleWithTheirLength() throws {
        let long = String(repeating: "a", count: 100) + "MIDDLE" + String(repeating: "z", count: 100)
        let old = try template(#"{"parameters": {"blob": {"defaultValue": {"value": "short"}}}}"#)
        let new = TemplateFixtures.setting(
            ["parameters", "blob", "defaultValue"], to: .object([("value", .string(long))]), in: old)
        let line = diff(old, new)
        #expect(line.contains("…(206 chars)…"))
        #expect(!line.contains("MIDDLE"))
        #expect(line.contains(#" -> "aaaa"#))
        #expect(line.hasSuffix("zzzz\"\n"))
        // The JSON form keeps the whole value.
        let change = try #require(TemplateDiff.changes(from: old, to: new).first)
        #expect(change.json["new"]?["value"]?.stringValue == long)
        // Two long values differing only in the elided middle still say they differ.
        let other = TemplateFixtures.setting(
            ["parameters", "blob", "defaultValue"],
            to: .object([("value", .string(long.replacingOccurrences(of: "MIDDLE", with: "CENTER")))]), in: old)
        #expect(diff(new, other).hasSuffix("(differs in the elided part)\n"))
    }

    @Test func changesAreSortedByKindThenKey() throws {
        let old = try template("{}")
        let new = try template(
            #"{"parameters": {"z": {}, "b": {}}, "conditions": [{"name": "y", "expression": "true"}], "parameterGroups": {"m": {"parameters": {"a": {}}}}}"#
        )
        let changes = TemplateDiff.changes(from: old, to: new)
        #expect(
            changes.map { "\($0.kind.rawValue) \($0.key)" } == [
                "condition y", "group m", "parameter a", "parameter b", "parameter z",
            ])
        #expect(changes.allSatisfy { $0.field == nil && $0.old == nil && $0.new != nil })
    }

    @Test func fromAndToAnEmptyTemplate() throws {
        let full = try TemplateFixtures.template()
        let added = TemplateDiff.changes(from: try template("{}"), to: full)
        let removed = TemplateDiff.changes(from: full, to: try template("{}"))
        #expect(added.count == 3 + 1 + 7)
        #expect(removed.count == added.count)
        #expect(removed.allSatisfy { $0.new == nil && $0.text.contains("removed") })
    }
}

/// The diff between a published version and a file taken with `template get -o`.
@Suite struct TemplateFileDiffTests {
    @Test func aFileOfTheSameTemplateShowsNoDifferencesAndAnEditShowsOne() throws {
        try TemporaryDirectory.with { dir in
            let published = try TemplateFixtures.template()
            let path = dir.file("t.json")
            try TemplateFile.write(path: path, template: published, etag: "etag-42")
            let (file, _) = try TemplateFile.read(path: path)
            #expect(TemplateDiff.text(TemplateDiff.changes(from: published, to: file)) == "no differences\n")
            // A reviewer's hand edit of the file, reindented by an editor.
            var text = String(decoding: try dir.read("t.json"), as: UTF8.self)
            text = text.replacingOccurrences(of: #""value": "Welcome!""#, with: #""value":   "Welcome back!""#)
            _ = try dir.write("t.json", text)
            let (edited, etag) = try TemplateFile.read(path: path)
            #expect(etag == "etag-42")
            #expect(
                TemplateDiff.text(TemplateDiff.changes(from: published, to: edited))
                    == #"parameter "welcome_message": default value "Welcome!" -> "Welcome back!""# + "\n")
        }
    }
}
