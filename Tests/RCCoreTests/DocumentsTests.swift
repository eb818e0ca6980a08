import RCCore
import Testing

/// The defaults file and both remote document shapes.
@Suite struct DocumentsTests {
    private func defaults(_ text: String, name: String = "/etc/rcagent/defaults.json") throws(DocumentError)
        -> [String: String]
    {
        try DefaultsDocument.parse(Array(text.utf8), name: name)
    }

    private func remote(_ text: String, name: String = "remote.json") throws(DocumentError) -> RemoteDocument {
        try RemoteDocument.parse(Array(text.utf8), name: name)
    }

    // MARK: - Defaults

    @Test func defaultsStoreEveryValueAsText() throws {
        let values = try defaults(
            """
            {
              "greeting": "hello",
              "empty": "",
              "count": 42,
              "negative": -7,
              "ratio": 1.5,
              "whole": 2.0,
              "enabled": true,
              "disabled": false,
              "update": {"version": "1.2.3", "download": "https://x/y", "deadline": null},
              "list": [3, "two", [1], {"b": 2, "a": 1}],
              "quoted": "say \\"hi\\""
            }
            """)
        #expect(
            values == [
                "greeting": "hello",
                "empty": "",
                "count": "42",
                "negative": "-7",
                "ratio": "1.5",
                "whole": "2",
                "enabled": "true",
                "disabled": "false",
                "update": #"{"deadline":null,"download":"https://x/y","version":"1.2.3"}"#,
                "list": #"[3,"two",[1],{"a":1,"b":2}]"#,
                "quoted": #"say "hi""#,
            ])
    }

    @Test func emptyDefaultsObjectIsEmpty() throws {
        #expect(try defaults("{}") == [:])
        #expect(try defaults("  {\n}\n") == [:])
    }

    @Test func nullDefaultIsRejectedNamingTheKey() {
        #expect(
            throws: DocumentError(document: "/etc/rcagent/defaults.json", reason: "key \"broken\": null is not a value")
        ) {
            try defaults(#"{"ok": "1", "broken": null}"#)
        }
    }

    @Test(arguments: [
        ("[1, 2]", "array"), (#""text""#, "string"), ("42", "number"), ("true", "boolean"), ("null", "null"),
    ])
    func nonObjectDefaultsAreRejected(_ text: String, _ typeName: String) {
        #expect(
            throws: DocumentError(
                document: "/etc/rcagent/defaults.json", reason: "expected a JSON object of key → value, got \(typeName)"
            )
        ) {
            try defaults(text)
        }
    }

    @Test(arguments: ["", "{", #"{"a": "1" "b": "2"}"#, #"{"a" "1"}"#, "not json", #"{"a": "1"} trailing"#])
    func invalidDefaultsJSONNamesTheDocument(_ text: String) {
        let error = #expect(throws: DocumentError.self) { try defaults(text, name: "/srv/my-defaults.json") }
        #expect(error?.document == "/srv/my-defaults.json")
        #expect(error?.reason.hasPrefix("invalid JSON: ") == true)
        #expect(error?.description.hasPrefix("/srv/my-defaults.json: invalid JSON: ") == true)
    }

    // MARK: - Fetch response

    @Test func fetchResponseUpdate() throws {
        let document = try remote(
            #"{"entries": {"a": "1", "b": "two", "c": ""}, "state": "UPDATE", "templateVersion": "42"}"#)
        #expect(document == .update(values: ["a": "1", "b": "two", "c": ""], templateVersion: "42"))
    }

    @Test func fetchResponseNonStringEntriesAreStoredAsText() throws {
        let document = try remote(#"{"entries": {"n": 5, "t": true, "o": {"y": 1, "x": [2]}}, "state": "UPDATE"}"#)
        #expect(document == .update(values: ["n": "5", "t": "true", "o": #"{"x":[2],"y":1}"#], templateVersion: nil))
    }

    @Test func fetchResponseWithoutStateIsAnUpdate() throws {
        #expect(try remote(#"{"entries": {"a": "1"}}"#) == .update(values: ["a": "1"], templateVersion: nil))
        #expect(
            try remote(#"{"state": "UPDATE", "templateVersion": "3"}"#) == .update(values: [:], templateVersion: "3"))
    }

    @Test func fetchResponseNoChange() throws {
        #expect(try remote(#"{"state": "NO_CHANGE"}"#) == .noChange)
        #expect(try remote(#"{"state": "NO_CHANGE", "templateVersion": "42"}"#) == .noChange)
    }

    @Test(arguments: ["NO_TEMPLATE", "EMPTY_CONFIG"])
    func fetchResponseWithoutConfigIsAnEmptyUpdate(_ state: String) throws {
        #expect(try remote(#"{"state": "\#(state)"}"#) == .update(values: [:], templateVersion: nil))
        #expect(
            try remote(#"{"state": "\#(state)", "entries": {"stale": "x"}, "templateVersion": "9"}"#)
                == .update(values: [:], templateVersion: "9"))
    }

    @Test(arguments: [
        (
            #"{"state": "PARTIAL"}"#,
            #"unknown state "PARTIAL" (expected UPDATE, NO_CHANGE, NO_TEMPLATE or EMPTY_CONFIG)"#
        ),
        (
            #"{"state": "update"}"#,
            #"unknown state "update" (expected UPDATE, NO_CHANGE, NO_TEMPLATE or EMPTY_CONFIG)"#
        ),
        (#"{"state": 1}"#, #""state" must be a string, got number"#),
        (#"{"state": "UPDATE", "entries": ["a"]}"#, #""entries" must be an object, got array"#),
        (#"{"entries": {"k": null}}"#, "entries.k: null is not a value"),
        (
            #"{"entries": {}, "templateVersion": "4a2"}"#,
            #""templateVersion" must be a decimal version number, got "4a2""#
        ),
        (#"{"entries": {}, "templateVersion": ""}"#, #""templateVersion" must be a decimal version number, got """#),
        (
            #"{"entries": {}, "templateVersion": "-1"}"#,
            #""templateVersion" must be a decimal version number, got "-1""#
        ),
        (#"{"entries": {}, "templateVersion": -1}"#, #""templateVersion" must be a decimal version number, got -1"#),
        // Stored, logged and sent in events: 64 digits at most.
        (
            #"{"entries": {}, "templateVersion": "\#(String(repeating: "9", count: 65))"}"#,
            #""templateVersion" must be a decimal version number, got "\#(String(repeating: "9", count: 65))""#
        ),
        (#"{"entries": {}, "templateVersion": 1.5}"#, #""templateVersion" must be a decimal version number, got 1.5"#),
        (
            #"{"entries": {}, "templateVersion": true}"#,
            #""templateVersion" must be a decimal version number, got true"#
        ),
        (
            #"{"state": "NO_CHANGE", "templateVersion": {}}"#,
            #""templateVersion" must be a decimal version number, got {}"#
        ),
    ])
    func badFetchResponse(_ text: String, _ reason: String) {
        #expect(throws: DocumentError(document: "remote.json", reason: reason)) { try remote(text) }
    }

    @Test(arguments: [
        (#""42""#, "42"), ("42", "42"), (#""0""#, "0"), ("0", "0"),
        (#""18446744073709551616""#, "18446744073709551616"),
    ])
    func templateVersionAsStringOrNumber(_ json: String, _ expected: String) throws {
        #expect(
            try remote(#"{"entries": {}, "templateVersion": \#(json)}"#)
                == .update(values: [:], templateVersion: expected))
    }

    @Test func nullTemplateVersionIsAbsent() throws {
        #expect(try remote(#"{"entries": {}, "templateVersion": null}"#) == .update(values: [:], templateVersion: nil))
    }

    // MARK: - Template

    @Test func templateDefaultValues() throws {
        let document = try remote(
            """
            {
              "conditions": [{"name": "beta", "expression": "true"}],
              "parameters": {
                "welcome": {"defaultValue": {"value": "hi"}, "valueType": "STRING"},
                "inApp": {"defaultValue": {"useInAppDefault": true}},
                "conditionalOnly": {"conditionalValues": {"beta": {"value": "b"}}},
                "empty": {"defaultValue": {"value": ""}},
                "json": {"defaultValue": {"value": "{\\"a\\": 1}"}, "valueType": "JSON"},
                "explicitFalse": {"defaultValue": {"useInAppDefault": false, "value": "v"}}
              },
              "version": {"versionNumber": "17", "updateUser": {"email": "a@b"}}
            }
            """)
        #expect(
            document
                == .update(
                    values: ["welcome": "hi", "empty": "", "json": #"{"a": 1}"#, "explicitFalse": "v"],
                    templateVersion: "17"))
    }

    @Test func templateVersionNumberAsNumberOrAbsent() throws {
        #expect(
            try remote(#"{"parameters": {}, "version": {"versionNumber": 8}}"#)
                == .update(values: [:], templateVersion: "8"))
        #expect(try remote(#"{"parameters": {}}"#) == .update(values: [:], templateVersion: nil))
        #expect(try remote(#"{"parameters": {}, "version": {}}"#) == .update(values: [:], templateVersion: nil))
    }

    @Test(arguments: [
        (
            #"{"parameters": {"k": {"defaultValue": {}}}}"#,
            #"parameters.k.defaultValue needs "value" or "useInAppDefault": true"#
        ),
        (
            #"{"parameters": {"k": {"defaultValue": {"useInAppDefault": false}}}}"#,
            #"parameters.k.defaultValue needs "value" or "useInAppDefault": true"#
        ),
        (
            #"{"parameters": {"k": {"defaultValue": {"value": 5}}}}"#,
            "parameters.k.defaultValue.value must be a string, got number"
        ),
        (
            #"{"parameters": {"k": {"defaultValue": {"value": true}}}}"#,
            "parameters.k.defaultValue.value must be a string, got boolean"
        ),
        (
            #"{"parameters": {"k": {"defaultValue": {"value": null}}}}"#,
            "parameters.k.defaultValue.value must be a string, got null"
        ),
        (#"{"parameters": {"k": "v"}}"#, "parameters.k must be an object, got string"),
        (#"{"parameters": ["k"]}"#, #""parameters" must be an object"#),
        (
            #"{"parameters": {}, "version": {"versionNumber": "v17"}}"#,
            #""version.versionNumber" must be a decimal version number, got "v17""#
        ),
    ])
    func badTemplate(_ text: String, _ reason: String) {
        #expect(throws: DocumentError(document: "remote.json", reason: reason)) { try remote(text) }
    }

    // MARK: - Neither

    @Test func neitherShapeIsRejected() {
        #expect(
            throws: DocumentError(
                document: "remote.json",
                reason: #"neither a fetch response ("entries"/"state") nor a template ("parameters")"#)
        ) {
            try remote(#"{"values": {"a": "1"}}"#)
        }
        #expect(throws: DocumentError(document: "remote.json", reason: "expected a JSON object, got array")) {
            try remote(#"[{"entries": {}}]"#)
        }
    }

    @Test(arguments: [#"{"entries": {"a": "1""#, #"{"parameters": {"k": {"defaultValue": {"value": "x"}"#, "", "{"])
    func truncatedRemoteDocumentIsInvalidJSON(_ text: String) {
        let error = #expect(throws: DocumentError.self) { try remote(text, name: "http://rc.example/config") }
        #expect(error?.document == "http://rc.example/config")
        #expect(error?.reason.hasPrefix("invalid JSON: ") == true)
    }

    /// SQLite's C API, the environment and the shell all end a string at NUL: a key or value holding
    /// one is refused by name, never stored cut short (two keys equal up to a NUL became one).
    @Test(arguments: [
        (
            #"{"entries": {"a\u0000b": "1", "a": "2"}}"#,
            #"remote.json: entries."a\u0000b": a key may not contain NUL (U+0000)"#
        ),
        (#"{"entries": {"k": "a\u0000b"}}"#, "remote.json: entries.k: a value may not contain NUL (U+0000)"),
        (
            #"{"parameters": {"k": {"defaultValue": {"value": "\u0000"}}}}"#,
            "remote.json: parameters.k: a value may not contain NUL (U+0000)"
        ),
    ])
    func nulIsRefusedNamingTheKey(_ text: String, _ message: String) {
        // (A JSON value holding "\u0000" is stored as its JSON text, escape and all: nothing to refuse.)
        let error = #expect(throws: DocumentError.self) {
            try RemoteDocument.parse(Array(text.utf8), name: "remote.json")
        }
        #expect(error?.description == message)
    }

    @Test func nulInADefaultIsRefusedNamingTheKey() {
        let error = #expect(throws: DocumentError.self) {
            try DefaultsDocument.parse(Array(#"{"ok": "1", "bad\n": "x\u0000"}"#.utf8), name: "defaults.json")
        }
        #expect(error?.description == #"defaults.json: key "bad\n": a value may not contain NUL (U+0000)"#)
    }
}
