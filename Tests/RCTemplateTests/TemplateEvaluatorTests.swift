import RCCore
import RCTemplate
import Testing

/// Resolving a whole template document: priority order, in-app defaults, versions, reporting, errors.
@Suite struct TemplateEvaluatorTests {
    private func fails(_ text: String, with reason: String) {
        #expect(throws: DocumentError(document: TemplateFixtures.documentName, reason: reason)) {
            try TemplateFixtures.evaluate(text)
        }
    }

    @Test func firstTrueConditionInConditionsOrderWins() throws {
        // conditionalValues lists "b" first; the conditions array puts "a" first.
        let document = """
            {
              "conditions": [
                {"name": "off", "condition": {"false": {}}},
                {"name": "a", "condition": {"true": {}}},
                {"name": "b", "condition": {"true": {}}}
              ],
              "parameters": {
                "p": {"defaultValue": {"value": "d"},
                      "conditionalValues": {"b": {"value": "B"}, "off": {"value": "OFF"}, "a": {"value": "A"}}},
                "q": {"defaultValue": {"value": "d"}, "conditionalValues": {"b": {"value": "B"}}},
                "r": {"defaultValue": {"value": "d"}, "conditionalValues": {"off": {"value": "OFF"}}}
              }
            }
            """
        #expect(try TemplateFixtures.evaluate(document).values == ["p": "A", "q": "B", "r": "d"])

        let reordered = """
            {
              "conditions": [
                {"name": "b", "condition": {"true": {}}},
                {"name": "a", "condition": {"true": {}}}
              ],
              "parameters": {"p": {"conditionalValues": {"a": {"value": "A"}, "b": {"value": "B"}}}}
            }
            """
        #expect(try TemplateFixtures.evaluate(reordered).values == ["p": "B"])
    }

    @Test func useInAppDefaultOmitsTheKey() throws {
        let document = """
            {
              "conditions": [{"name": "beta", "condition": {"true": {}}}],
              "parameters": {
                "conditional": {"defaultValue": {"value": "remote"}, "conditionalValues": {"beta": {"useInAppDefault": true}}},
                "byDefault": {"defaultValue": {"useInAppDefault": true}},
                "overridden": {"defaultValue": {"useInAppDefault": true}, "conditionalValues": {"beta": {"value": "beta"}}},
                "plain": {"defaultValue": {"value": "plain"}}
              }
            }
            """
        #expect(try TemplateFixtures.evaluate(document).values == ["overridden": "beta", "plain": "plain"])
    }

    @Test func parameterWithoutDefaultOrMatchIsOmitted() throws {
        let document = """
            {
              "conditions": [{"name": "never", "condition": {"false": {}}}],
              "parameters": {
                "orphan": {"conditionalValues": {"never": {"value": "x"}}},
                "empty": {},
                "kept": {"defaultValue": {"value": ""}}
              }
            }
            """
        #expect(try TemplateFixtures.evaluate(document).values == ["kept": ""])
    }

    @Test func conditionalValueNamingNoConditionNeverMatches() throws {
        let document = """
            {
              "conditions": [{"name": "real", "condition": {"false": {}}}],
              "parameters": {"p": {"defaultValue": {"value": "d"}, "conditionalValues": {"ghost": {"value": "g"}}}}
            }
            """
        #expect(try TemplateFixtures.evaluate(document).values == ["p": "d"])
    }

    @Test func expressionConditionIsFalseAndReportedOnce() throws {
        let document = """
            {
              "conditions": [
                {"name": "old_app", "expression": "app.version.>=(['1.2'])", "tagColor": "BLUE"},
                {"name": "everyone", "condition": {"true": {}}},
                {"name": "ios", "expression": "device.os == 'ios'"}
              ],
              "parameters": {
                "a": {"defaultValue": {"value": "d"}, "conditionalValues": {"old_app": {"value": "x"}, "ios": {"value": "y"}}},
                "b": {"defaultValue": {"value": "d"}, "conditionalValues": {"old_app": {"value": "x"}, "everyone": {"value": "e"}}},
                "c": {"defaultValue": {"value": "d"}, "conditionalValues": {"ios": {"value": "y"}}}
              }
            }
            """
        let result = try TemplateFixtures.evaluate(document)
        #expect(result.values == ["a": "d", "b": "e", "c": "d"])
        #expect(result.unsupportedConditions == ["ios", "old_app"])
    }

    /// Found by the `template` fuzz target: the unsupported conditions come in the order of their
    /// names' bytes (a combining mark after "a" sorts before "b"), each once.
    @Test func unsupportedConditionsAreListedInByteOrder() throws {
        let result = try TemplateFixtures.evaluate(
            #"""
            {"parameters": {"p": {"defaultValue": {"value": "0"}}},
             "conditions": [{"name": "beta", "condition": {"geo": {"country": "DE"}}},
                            {"name": "a\u0301client", "expression": "app.version.>=(['1.0'])"},
                            {"name": "future", "condition": {"geo": {"country": "FR"}}}]}
            """#)
        #expect(result.unsupportedConditions.map(\.utf8.first) == [0x61, 0x62, 0x66])
    }

    @Test func structuredConditionTakesPrecedenceOverAnExpression() throws {
        let document = """
            {
              "conditions": [{"name": "both", "expression": "device.os == 'ios'", "condition": {"true": {}}}],
              "parameters": {"p": {"conditionalValues": {"both": {"value": "yes"}}}}
            }
            """
        let result = try TemplateFixtures.evaluate(document)
        #expect(result == TemplateEvaluation(values: ["p": "yes"], templateVersion: nil, unsupportedConditions: []))
    }

    @Test func fullServerTemplateRoundTrip() throws {
        let document = """
            {
              "conditions": [
                {"name": "berlin_kiosks", "condition": {"orCondition": {"conditions": [{"andCondition": {"conditions": [
                  {"customSignal": {"customSignalOperator": "STRING_EXACTLY_MATCHES", "customSignalKey": "city",
                                    "targetCustomSignalValues": ["berlin"]}},
                  {"customSignal": {"customSignalOperator": "SEMANTIC_VERSION_GREATER_EQUAL", "customSignalKey": "app_version",
                                    "targetCustomSignalValues": ["2.4"]}}
                ]}}]}}},
                {"name": "everyone_else", "condition": {"orCondition": {"conditions": [{"andCondition": {"conditions": [
                  {"percent": {"percentOperator": "BETWEEN", "seed": "s1",
                               "microPercentRange": {"microPercentLowerBound": -1, "microPercentUpperBound": 100000000}}}
                ]}}]}}},
                {"name": "ios", "expression": "device.os == 'ios'"}
              ],
              "parameters": {
                "kiosk_url": {"defaultValue": {"value": "https://example.com/"},
                              "conditionalValues": {"berlin_kiosks": {"value": "https://example.com/berlin"}},
                              "valueType": "STRING", "description": "start page"},
                "banner": {"defaultValue": {"value": "off"},
                           "conditionalValues": {"everyone_else": {"value": "on"}, "berlin_kiosks": {"useInAppDefault": true}},
                           "valueType": "BOOLEAN"},
                "limits": {"defaultValue": {"value": "{\\"max\\": 3}"}, "valueType": "JSON"},
                "legacy": {"defaultValue": {"useInAppDefault": true}, "conditionalValues": {"ios": {"value": "1"}}}
              },
              "parameterGroups": {"g": {"parameters": {"grouped": {"defaultValue": {"value": "g"}}}}},
              "version": {"versionNumber": "42", "updateTime": "2026-01-01T00:00:00Z", "updateOrigin": "ADMIN_SDK_NODE"},
              "etag": "etag-123"
            }
            """
        let berlin = try TemplateFixtures.evaluate(document, signals: ["city": " berlin ", "app_version": "2.4.0"])
        #expect(
            berlin
                == TemplateEvaluation(
                    values: ["kiosk_url": "https://example.com/berlin", "limits": #"{"max": 3}"#],
                    templateVersion: "42", unsupportedConditions: ["ios"]))

        let paris = try TemplateFixtures.evaluate(document, signals: ["city": "paris", "app_version": "2.4.0"])
        #expect(
            paris
                == TemplateEvaluation(
                    values: ["kiosk_url": "https://example.com/", "banner": "on", "limits": #"{"max": 3}"#],
                    templateVersion: "42", unsupportedConditions: ["ios"]))

        let oldBerlin = try TemplateFixtures.evaluate(document, signals: ["city": "berlin", "app_version": "2.3.9"])
        #expect(oldBerlin.values["kiosk_url"] == "https://example.com/")
        #expect(oldBerlin.values["banner"] == "on")
    }

    @Test func versionNumberMayBeAStringOrAnInteger() throws {
        #expect(
            try TemplateFixtures.evaluate(#"{"parameters": {}, "version": {"versionNumber": "7"}}"#).templateVersion
                == "7")
        #expect(
            try TemplateFixtures.evaluate(#"{"parameters": {}, "version": {"versionNumber": 8}}"#).templateVersion
                == "8")
        #expect(try TemplateFixtures.evaluate(#"{"parameters": {}, "version": {}}"#).templateVersion == nil)
        #expect(
            try TemplateFixtures.evaluate(#"{"parameters": {}}"#)
                == TemplateEvaluation(values: [:], templateVersion: nil, unsupportedConditions: []))
        fails(
            #"{"parameters": {}, "version": {"versionNumber": "v9"}}"#,
            with: #""version.versionNumber" must be a decimal version number, got "v9""#)
        fails(#"{"parameters": {}, "version": 9}"#, with: #""version" must be an object, got number"#)
        // At most 64 digits, as every reader of versions: the version is stored, logged and sent.
        let longest = String(repeating: "9", count: RemoteDocument.maximumVersionDigits)
        #expect(
            try TemplateFixtures.evaluate(#"{"parameters": {}, "version": {"versionNumber": "\#(longest)"}}"#)
                .templateVersion == longest)
        fails(
            #"{"parameters": {}, "version": {"versionNumber": "\#(longest)1"}}"#,
            with: #""version.versionNumber" must be a decimal version number, got "\#(longest)1""#)
    }

    @Test func onlyDocumentsWithParametersAreTemplates() {
        fails(#"{"entries": {"a": "1"}, "state": "UPDATE"}"#, with: #"not a template: no "parameters" object"#)
        fails(#"[1, 2]"#, with: #"not a template: expected a JSON object with "parameters", got array"#)
        fails(#"{"parameters": []}"#, with: #""parameters" must be an object, got array"#)
    }

    @Test func badJSONIsADocumentError() throws {
        let error = #expect(throws: DocumentError.self) { try TemplateFixtures.evaluate(#"{"parameters": "#) }
        #expect(error?.document == TemplateFixtures.documentName)
        #expect(error?.reason.hasPrefix("invalid JSON") == true)
    }

    @Test func wrongShapesNameTheField() {
        fails(#"{"parameters": {}, "conditions": {}}"#, with: #""conditions" must be an array, got object"#)
        fails(
            #"{"parameters": {}, "conditions": [{"condition": {"true": {}}}]}"#,
            with: "conditions[0].name must be a non-empty string, got nothing")
        fails(
            #"{"parameters": {}, "conditions": [{"name": "x", "condition": {"true": {}}}, {"name": "x", "condition": {"false": {}}}]}"#,
            with: #"conditions[1].name "x" is already used by an earlier condition"#)
        fails(
            #"{"parameters": {}, "conditions": [{"name": "x", "tagColor": "BLUE"}]}"#,
            with: #"conditions[0] ("x") needs "condition" (or a client-template "expression")"#)
        fails(#"{"parameters": {"p": "v"}}"#, with: "parameters.p must be an object, got string")
        fails(
            #"{"parameters": {"p": {"defaultValue": {"value": 3}}}}"#,
            with: "parameters.p.defaultValue.value must be a string, got number")
        fails(
            #"{"parameters": {"p": {"defaultValue": {"rolloutValue": {}}}}}"#,
            with: #"parameters.p.defaultValue needs "value" or "useInAppDefault": true"#)
        fails(
            #"{"parameters": {"p": {"defaultValue": null}}}"#,
            with: "parameters.p.defaultValue must be an object, got null")
        fails(
            #"{"parameters": {"p": {"conditionalValues": {"c": {"value": true}}}}}"#,
            with: "parameters.p.conditionalValues.c.value must be a string, got boolean")
        fails(
            #"{"parameters": {"p": {"conditionalValues": []}}}"#,
            with: "parameters.p.conditionalValues must be an object, got array")
    }

    /// NUL in a key or in any value (chosen or not) is refused by name, as for every other document.
    @Test func nulIsRefusedNamingTheKey() {
        fails(
            #"{"parameters": {"a\u0000b": {"defaultValue": {"value": "x"}}}}"#,
            with: #"parameters."a\u0000b": a key may not contain NUL (U+0000)"#)
        fails(
            #"{"conditions": [], "parameters": {"p": {"defaultValue": {"value": "x"}, "conditionalValues": {"c": {"value": "\u0000"}}}}}"#,
            with: "parameters.p.conditionalValues.c.value: a value may not contain NUL (U+0000)")
    }

    /// Each regex may take up to the match limit: a template may hold 1,000 of them in all, so its
    /// evaluation stays a fraction of a second whatever the patterns.
    @Test func regexTargetsPerTemplateAreBounded() throws {
        func template(regexes: Int) -> String {
            let targets = (0..<regexes).map { "\"(.*?)*(.*?)*\\\\b\\\\B\($0)\"" }
            let signal =
                #"{"customSignal": {"customSignalOperator": "STRING_CONTAINS_REGEX", "customSignalKey": "store", "targetCustomSignalValues": ["#
                + targets.joined(separator: ",") + "]}}"
            // Split over two conditions, one nested: the count is the template's, not a condition's.
            return #"{"conditions": [{"name": "a", "condition": "# + signal
                + #"}, {"name": "b", "condition": {"orCondition": {"conditions": ["#
                + signal
                + #"]}}}], "parameters": {"p": {"defaultValue": {"value": "d"}, "conditionalValues": {"a": {"value": "A"}}}}}"#
        }
        #expect(
            try TemplateFixtures.evaluate(template(regexes: 500), signals: ["store": "berlin-12"]).values == ["p": "d"])
        fails(template(regexes: 501), with: "1002 STRING_CONTAINS_REGEX targets; a template may have at most 1000")
    }
}
