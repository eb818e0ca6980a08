import RCCore
import Testing

/// The JSON value type every document is decoded into, and its compact writer.
@Suite struct JSONValueTests {
    @Test func parsesEveryKindOfValue() throws {
        let value = try JSONValue.parse(
            #"{"s": "x", "i": -12, "d": 2.5, "t": true, "f": false, "n": null, "a": [1, [], {}], "o": {"k": "v"}}"#)
        #expect(
            value
                == .object([
                    ("a", .array([.integer(1), .array([]), .object([])])),
                    ("d", .double(2.5)),
                    ("f", .bool(false)),
                    ("i", .integer(-12)),
                    ("n", .null),
                    ("o", .object([("k", .string("v"))])),
                    ("s", .string("x")),
                    ("t", .bool(true)),
                ]))
        #expect(value["s"] == .string("x"))
        #expect(value["missing"] == nil)
        #expect(value["o"]?["k"]?.stringValue == "v")
        #expect(value["i"]?.stringValue == nil)
        #expect(JSONValue.array([]).objectMembers == nil)
        #expect(JSONValue.string("x")["k"] == nil)
    }

    @Test func objectKeysAreSortedSoOutputIsDeterministic() throws {
        let a = try JSONValue.parse(#"{"b": 1, "a": 2, "c": {"z": 1, "y": 2}}"#)
        let b = try JSONValue.parse(#"{"c": {"y": 2, "z": 1}, "a": 2, "b": 1}"#)
        #expect(a == b)
        #expect(a.compactText == #"{"a":2,"b":1,"c":{"y":2,"z":1}}"#)
        #expect(a.objectMembers?.map(\.key) == ["a", "b", "c"])
    }

    /// Every line break Unicode knows is escaped, so compact JSON is one line for any line reader,
    /// and the text reads back the same.
    @Test func unicodeLineBreaksAreEscaped() throws {
        let value = JSONValue.object([("a\u{2028}b", .string("x\u{2029}y\u{85}z\n"))])
        let text = value.compactText
        #expect(text == #"{"a\u2028b":"x\u2029y\u0085z\n"}"#, "\(text)")
        #expect(text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).count == 1)
        #expect(try JSONValue.parse(text) == value)
    }

    @Test func unicodeEscapesAreFourHexDigitsAndSurrogatePairsBeyondTheBMP() {
        #expect(JSONValue.unicodeEscape("\u{1}") == #"\u0001"#)
        #expect(JSONValue.unicodeEscape("\u{202E}") == #"\u202e"#)
        #expect(JSONValue.unicodeEscape("\u{1F600}") == #"\ud83d\ude00"#)
    }

    @Test func equalityIsStructural() {
        #expect(JSONValue.integer(1) != .double(1.5))
        #expect(JSONValue.integer(1) != .string("1"))
        #expect(JSONValue.array([.null]) != .array([]))
        #expect(JSONValue.object([("a", .null)]) != .object([("b", .null)]))
        #expect(JSONValue.object([("a", .null)]) != .object([("a", .null), ("b", .null)]))
    }

    @Test(arguments: [
        ("0", JSONValue.integer(0)),
        ("-3", .integer(-3)),
        ("9223372036854775807", .integer(Int64.max)),
        ("-9223372036854775808", .integer(Int64.min)),
        ("1.5", .double(1.5)),
        ("-0.25", .double(-0.25)),
        ("1e-3", .double(0.001)),
        // Past Int64: the nearest Double (12345678901234567168), as Double's own parser reads it.
        ("12345678901234567890", .double(Double("12345678901234567890")!)),
    ])
    func integersAndDoubles(_ text: String, _ expected: JSONValue) throws {
        #expect(try JSONValue.parse(text) == expected)
    }

    @Test(arguments: [
        ("0", "0"), ("-3", "-3"), ("1.0", "1"), ("1e3", "1000"), ("1.5", "1.5"), ("-0.25", "-0.25"), ("1E2", "100"),
        ("9223372036854775807", "9223372036854775807"), ("0.1", "0.1"),
    ])
    func numbersAreWrittenShortest(_ text: String, _ expected: String) throws {
        #expect(try JSONValue.parse(text).compactText == expected)
    }

    @Test(arguments: [
        (0.5, "0.5"), (1.0, "1"), (-2.0, "-2"), (-0.0, "0"), (0.1, "0.1"), (1e20, "1e+20"), (123.456, "123.456"),
        (9_007_199_254_740_991, "9007199254740991"), (18_014_398_509_481_984, "1.8014398509481984e+16"),
        (Double.infinity, "null"), (-Double.infinity, "null"), (Double.nan, "null"),
    ])
    func formatDoubles(_ value: Double, _ expected: String) {
        #expect(JSONValue.format(value) == expected)
    }

    @Test(arguments: [
        ("plain", #""plain""#),
        ("", #""""#),
        (#"say "hi""#, #""say \"hi\"""#),
        (#"back\slash"#, #""back\\slash""#),
        ("line\nfeed\rreturn\ttab", #""line\nfeed\rreturn\ttab""#),
        ("\u{0}nul", #""\u0000nul""#),
        ("\u{1}\u{8}\u{c}\u{1b}\u{1f}", #""\u0001\u0008\u000c\u001b\u001f""#),
        ("space \u{7f} del", "\"space \u{7f} del\""),
        ("/slash", #""/slash""#),
        ("café 😀 日本", "\"café 😀 日本\""),
        // Unicode line breaks are escaped: compact JSON stays one line for any line reader.
        ("\u{2028}", #""\u2028""#),
        ("x\u{2029}", #""x\u2029""#),
        ("\u{85}", #""\u0085""#),
        // Bytes of those three in other characters are written as they are (C2 A8, C3 85, E2 80 A7,
        // E2 80 AA, E2 81 A8).
        ("\u{a8}\u{c5}\u{2027}\u{202a}\u{2068}", "\"\u{a8}\u{c5}\u{2027}\u{202a}\u{2068}\""),
    ])
    func stringEscaping(_ text: String, _ expected: String) throws {
        #expect(JSONValue.string(text).compactText == expected)
        var out = ">"
        JSONValue.writeString(text, to: &out)
        #expect(out == ">" + expected)
        var bytes = Array(">".utf8)
        JSONValue.string(text).write(toBytes: &bytes)
        #expect(bytes == Array((">" + expected).utf8))
        // What is written reads back as the same string.
        #expect(try JSONValue.parse(expected) == .string(text))
    }

    @Test(arguments: [
        #"{"a":[1,2.5,"x",true,false,null],"b":{"c":{}},"d":[]}"#,
        #"["\"quoted\"","back\\slash","ctl\u0001","tab\t","é"]"#,
        #"{"":"empty key","k":-9223372036854775808}"#,
        "[]",
        "{}",
        #""text""#,
        "null",
    ])
    func compactTextRoundTrips(_ compact: String) throws {
        let value = try JSONValue.parse(compact)
        #expect(value.compactText == compact)
        var bytes: [UInt8] = []
        value.write(toBytes: &bytes)
        #expect(bytes == Array(compact.utf8))
        #expect(try JSONValue.parse(value.compactText) == value)
    }

    @Test func compactTextRemovesWhitespace() throws {
        let value = try JSONValue.parse(
            """
            {
              "list" : [ 1 ,
                2 ] ,
              "text" : "keeps  inner  spaces"
            }
            """)
        #expect(value.compactText == #"{"list":[1,2],"text":"keeps  inner  spaces"}"#)
    }

    @Test func configTextIsTheValueAsRemoteConfigStoresIt() {
        #expect(JSONValue.null.configText == nil)
        #expect(JSONValue.string("as is \"x\"").configText == "as is \"x\"")
        #expect(JSONValue.integer(42).configText == "42")
        #expect(JSONValue.double(0.5).configText == "0.5")
        #expect(JSONValue.bool(true).configText == "true")
        #expect(JSONValue.array([.string("a"), .null]).configText == #"["a",null]"#)
        #expect(JSONValue.object([("k", .integer(1))]).configText == #"{"k":1}"#)
    }

    @Test func typeNames() {
        #expect(
            [JSONValue.null, .bool(true), .integer(1), .double(1.5), .string(""), .array([]), .object([])].map(
                \.typeName)
                == ["null", "boolean", "number", "number", "string", "array", "object"])
    }

    @Test(arguments: ["", "   ", "{", "[1, 2", "tru", #"{"a": }"#, #"{"a" 1}"#, "'single'", "[1 2]", "{} {}", "\u{1}"])
    func invalidJSONIsAnError(_ text: String) {
        let error = #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
        #expect(error?.description.hasPrefix("invalid JSON: ") == true)
        #expect(error?.reason.isEmpty == false)
    }

    @Test func parsesBytes() throws {
        #expect(try JSONValue.parse([UInt8](#"{"k": [true]}"#.utf8)) == .object([("k", .array([.bool(true)]))]))
        #expect(try JSONValue.parse(ArraySlice(Array("  7 ".utf8))) == .integer(7))
    }
}
