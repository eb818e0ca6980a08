import RCCore
import Testing

/// A document read member by member (``DocumentShape/init(bytes:)``) is what the tree says it is
/// (``DocumentShape/init(_:)`` of ``JSONValue/parse(_:)``), and bytes the tree refuses are refused with
/// the same words: the two ways a document reaches the readers cannot disagree.
@Suite struct DocumentShapeTests {
    /// Both readings of `text`: the shapes' descriptions (every field, in order), or the errors'.
    private func bothWays(_ text: String) -> (pulled: String, tree: String) {
        let bytes = Array(text.utf8)
        let pulled = Result { () throws(JSONParseError) in try DocumentShape(bytes: bytes) }
        let tree = Result { () throws(JSONParseError) in try JSONValue.parse(bytes) }.map(DocumentShape.init)
        func describe(_ result: Result<DocumentShape, JSONParseError>) -> String {
            switch result {
            case let .success(shape): "shape \(shape)"
            case let .failure(error): "error \(error.reason)"
            }
        }
        return (describe(pulled), describe(tree))
    }

    static let documents = [
        // Templates: every kind of value, and what each reader looks past.
        #"{"parameters": {"a": {"defaultValue": {"value": "1"}}}, "conditions": [], "version": {"versionNumber": "7"}}"#,
        #"{"parameters": {"b": {"defaultValue": {"useInAppDefault": true, "value": "x"}}, "a": {}}}"#,
        #"{"parameters": {"a": {"defaultValue": null}, "b": {"defaultValue": "text"}, "c": {"defaultValue": {}}}}"#,
        #"{"parameters": {"a": {"defaultValue": {"value": null}}, "b": {"defaultValue": {"value": 3}}}}"#,
        #"{"parameters": {"a": {"defaultValue": {"value": [1, {"x": 2}]}}, "b": {"defaultValue": {"useInAppDefault": false}}}}"#,
        #"{"parameters": {"a": 1, "b": [], "c": "x", "d": null, "e": true}}"#,
        #"{"parameters": [], "conditions": []}"#,
        #"{"parameters": null}"#,
        #"{"parameters": "x", "entries": {"k": "v"}}"#,
        #"{"parameters": {"a": {"conditionalValues": {"c2": {"value": "2"}, "c1": {"useInAppDefault": true}}}}}"#,
        #"{"parameters": {"a": {"conditionalValues": null, "defaultValue": {"value": "d"}}}}"#,
        #"{"parameters": {"a": {"conditionalValues": [], "description": "x", "valueType": "STRING"}}}"#,
        #"{"parameters": {"a": {"conditionalValues": {"c": 5, "d": {"value": {}}}}}}"#,
        #"{"parameterGroups": {"g": {"parameters": {"x": {}}}}, "parameters": {}}"#,
        // Members out of the names' order, at every level.
        #"{"version": {}, "parameters": {"z": {"valueType": "S", "defaultValue": {"value": "1"}}, "a": {}}, "conditions": []}"#,
        #"{"parameters": {"a": {"defaultValue": {"value": "1", "extra": 2}, "conditionalValues": {"z": {"value": "z"}, "y": {"value": "y"}}}}}"#,
        // Fetch responses and other shapes.
        #"{"entries": {"k": "v", "n": 1}, "state": "UPDATE", "templateVersion": "3"}"#,
        #"{"state": "NO_CHANGE"}"#,
        "{}",
        " \n{ } \t",
        "[]",
        #""parameters""#,
        "null",
        "12",
        // Names given twice, at every level, and in two Unicode normalization forms.
        #"{"parameters": {}, "parameters": {}}"#,
        #"{"parameters": {"a": {}, "b": {}, "a": {}}}"#,
        #"{"parameters": {"b": {}, "a": {}, "b": {}}}"#,
        #"{"parameters": {"a": {"defaultValue": {"value": "1"}, "defaultValue": {"value": "2"}}}}"#,
        #"{"parameters": {"a": {"defaultValue": {"value": "1", "value": "2"}}}}"#,
        #"{"parameters": {"a": {"conditionalValues": {"c": {"value": "1"}, "c": {"value": "2"}}}}}"#,
        #"{"parameters": {"a": {"description": 1, "description": 2}}}"#,
        #"{"parameters": {"a": {"x": {"y": 1, "y": 2}}}}"#,
        "{\"parameters\": {\"caf\u{e9}\": {}, \"cafe\u{301}\": {}}}",
        "{\"parameters\": {\"cafe\u{301}\": {}, \"caf\u{e9}\": {}}}",
        "{\"parameters\": {\"x\": {}, \"caf\u{e9}\": {}, \"a\": {}, \"cafe\u{301}\": {}}}",
        "{\"parameters\": {\"a\": {\"conditionalValues\": {\"\u{212a}\": {}, \"K\": {}}}}}",
        "{\"\u{212a}\": 1, \"parameters\": {}, \"K\": 2}",
        // Broken JSON at every level: the first error, where the tree meets it.
        "",
        "{",
        #"{"parameters": {"a": {"defaultValue": {"value": "1"}}}"#,
        #"{"parameters": {"a": {"defaultValue": {"value": "1"},}}}"#,
        #"{"parameters": {"a": {"defaultValue": {"value" "1"}}}}"#,
        #"{"parameters": {"a": {"defaultValue": {"value": }}}}"#,
        #"{"parameters": {"a" {}}}"#,
        #"{"parameters": {"a": {} "b": {}}}"#,
        #"{"parameters": {,}}"#,
        #"{"parameters": {"a": {"defaultValue": {"value": "1\u0000"}}}}"#,
        #"{"parameters": {"a": {"defaultValue": {"value": "unterminated}}}}"#,
        #"{"parameters": {}} x"#,
        #"{"parameters": {}}}"#,
        #"{"parameters": {}, "x": tru}"#,
        #"{"parameters": {"a": {"conditionalValues": {"c": {"value": 01}}}}}"#,
        #"{"a": 1, "a": 2, "parameters": {"b": }}"#,
    ]

    @Test(arguments: documents) func bytesAndTreeReadTheSame(_ text: String) {
        let (pulled, tree) = bothWays(text)
        #expect(pulled == tree)
    }

    /// Nesting is bounded as the tree bounds it, wherever it is: 100 levels, counted from the top.
    @Test(arguments: [98, 99, 100, 101]) func nestingIsBoundedAtTheSameDepth(_ depth: Int) {
        let deep = { (levels: Int) in String(repeating: "[", count: levels) + String(repeating: "]", count: levels) }
        let documents = [
            // `[` levels under the top object, `parameters`, a parameter and its default value.
            #"{"parameters": {"a": {"defaultValue": {"x": \#(deep(depth - 4))}}}}"#,
            #"{"parameters": {"a": {"conditionalValues": {"c": {"x": \#(deep(depth - 5))}}}}}"#,
            #"{"parameters": {"a": {"valueType": \#(deep(depth - 3))}}}"#,
            #"{"conditions": \#(deep(depth - 1)), "parameters": {}}"#,
            deep(depth),
        ]
        for text in documents {
            let (pulled, tree) = bothWays(text)
            #expect(pulled == tree)
            #expect(pulled.hasPrefix("shape") == (depth <= 100), "\(pulled)")
        }
    }

    /// What a template's readers are given: each parameter's default and conditional values, keys in
    /// byte order whatever order they came in.
    @Test func aTemplateReadsIntoItsParameters() throws {
        let shape = try DocumentShape(
            bytes: Array(
                #"""
                {"version": {"versionNumber": "4"},
                 "parameters": {
                   "b": {"conditionalValues": {"on": {"value": "B1"}}, "defaultValue": {"value": "B"}},
                   "a": {"defaultValue": {"useInAppDefault": true}, "description": "kept out"}},
                 "conditions": [{"name": "on", "expression": "true"}]}
                """#.utf8))
        #expect(shape.notObject == nil)
        #expect(shape["version"] == .object([("versionNumber", .string("4"))]))
        #expect(shape["conditions"] != nil)
        #expect(shape["parameters"] == nil)
        guard case let .members(parameters)? = shape.parameters else {
            Issue.record("no parameters: \(shape)")
            return
        }
        #expect(parameters.map(\.key) == ["a", "b"])
        guard case .inAppDefault? = parameters[0].parameter.defaultValue,
            case let .text(b)? = parameters[1].parameter.defaultValue,
            case let .members(conditional) = parameters[1].parameter.conditionalValues,
            conditional.count == 1, case let .text(b1) = conditional[0].value
        else {
            Issue.record("unexpected parameters: \(parameters)")
            return
        }
        #expect(b == "B" && b1 == "B1" && conditional[0].condition == "on")
    }
}
