import RCCore
import Testing

/// Reading stored strings as the `--type`s of `rcagent get`.
@Suite struct ConfigValueTests {
    private func value(_ text: String) -> ConfigValue { ConfigValue(key: "k", text: text, source: .remote) }

    /// The conversion error for `text` as `type`, or `nil` (and a recorded issue) when it converts.
    private func failure(_ text: String, as type: ValueType) -> ValueConversionError? {
        #expect(throws: ValueConversionError.self) { try value(text).rendered(as: type) }
    }

    // MARK: - bool

    static let trueTexts = [
        "1", "true", "t", "yes", "y", "on",
        "TRUE", "True", "tRuE", "T", "YES", "Yes", "Y", "ON", "On",
        " true", "true ", "  yes  ", "\ton\t", "\n1\r\n", " Y ",
    ]
    static let falseTexts = [
        "0", "false", "f", "no", "n", "off", "",
        "FALSE", "False", "F", "NO", "No", "N", "OFF", "oFf",
        " false ", "\t0", "no\n", "   ", "\t", " Off ",
    ]
    static let notBooleans = [
        "2", "-1", "yes!", "tru", "truee", "ye", "of", "o", "nope", "none", "null", "1.0", "01", "true false", "y e s",
        "enabled", "ja",
    ]

    @Test(arguments: trueTexts)
    func trueWords(_ text: String) throws {
        #expect(value(text).boolValue == true)
        #expect(try value(text).rendered(as: .bool) == "true")
    }

    @Test(arguments: falseTexts)
    func falseWords(_ text: String) throws {
        #expect(value(text).boolValue == false)
        #expect(try value(text).rendered(as: .bool) == "false")
    }

    @Test(arguments: notBooleans)
    func otherTextIsNotABoolean(_ text: String) {
        #expect(value(text).boolValue == nil)
        let error = failure(text, as: .bool)
        #expect(error?.key == "k")
        #expect(error?.type == .bool)
        #expect(error?.value == text)
    }

    // MARK: - int

    @Test(arguments: [
        ("42", "42"),
        ("-7", "-7"),
        ("+5", "5"),
        (" 12 ", "12"),
        ("\t12\n", "12"),
        ("12\r\n", "12"),
        ("0", "0"),
        ("-0", "0"),
        ("007", "7"),
        ("42.0", "42"),
        ("-3.000", "-3"),
        ("1e3", "1000"),
        ("1.5e1", "15"),
        ("2E2", "200"),
        ("9223372036854775807", "9223372036854775807"),
        ("-9223372036854775808", "-9223372036854775808"),
        ("9007199254740993", "9007199254740993"),
    ])
    func intRendering(_ text: String, _ expected: String) throws {
        #expect(try value(text).rendered(as: .int) == expected)
        #expect(value(text).intValue.map(String.init) == expected)
    }

    @Test(arguments: [
        "42.5", "-0.1", "1e-3", "abc", "", " ", "0x10", "0b1", "inf", "-inf", "Infinity", "nan", "NaN", "1,000",
        "1 000",
        "9223372036854775808", "-9223372036854775809", "-9223372036854776833", "99999999999999999999", "1e19", "1e400",
        "+-5", "-+5", "++5", "--5", "+", "-", ".", "e3",
        "5e", "12abc", "١٢",
    ])
    func notAnInt(_ text: String) {
        #expect(value(text).intValue == nil)
        let error = failure(text, as: .int)
        #expect(error?.type == .int)
        #expect(error?.value == text)
    }

    // MARK: - number

    @Test(arguments: [
        ("3.14", "3.14"),
        ("1e3", "1000"),
        (".5", "0.5"),
        ("-0.25", "-0.25"),
        ("+1.5", "1.5"),
        ("2.50", "2.5"),
        ("42", "42"),
        ("42.0", "42"),
        ("-7", "-7"),
        (" 7 ", "7"),
        ("0", "0"),
        ("-0.0", "0"),
        ("1.5E2", "150"),
        ("9223372036854775807", "9223372036854775807"),
    ])
    func numberRendering(_ text: String, _ expected: String) throws {
        #expect(try value(text).rendered(as: .number) == expected)
    }

    @Test(arguments: [
        "0x10", "0x1p3", "inf", "-inf", "infinity", "nan", "NaN", "", "   ", "abc", "1e", "e5", "1e+", "--1", "+-1",
        "1,5",
        "1.2.3", ".", "-", "1e400", "1 2", "3.14abc",
    ])
    func notANumber(_ text: String) {
        #expect(value(text).numberValue == nil)
        let error = failure(text, as: .number)
        #expect(error?.type == .number)
    }

    // MARK: - json

    @Test(arguments: [
        (#"{"b": 1, "a": [true, null, "x"]}"#, #"{"a":[true,null,"x"],"b":1}"#),
        (#"{"z": {"y": 1, "x": {"w": 2, "v": 3}}}"#, #"{"z":{"x":{"v":3,"w":2},"y":1}}"#),
        ("[1, 2 ,\n 3]", "[1,2,3]"),
        ("  { }  ", "{}"),
        ("[]", "[]"),
        ("42", "42"),
        ("-1.50", "-1.5"),
        ("1e3", "1000"),
        ("true", "true"),
        ("false", "false"),
        ("null", "null"),
        (#""hello""#, #""hello""#),
        (#""caf\u00e9 \ud83d\ude00""#, "\"café 😀\""),
        (#"{"msg": "a \"quoted\" word\n"}"#, #"{"msg":"a \"quoted\" word\n"}"#),
    ])
    func jsonIsReserializedCompactlyWithSortedKeys(_ text: String, _ expected: String) throws {
        #expect(try value(text).rendered(as: .json) == expected)
    }

    @Test(arguments: ["hello", "", "   ", "{", "[1, 2", #"{"a": }"#, "{'a': 1}", "tru", "[1 2]", #"{"a" 1}"#])
    func notJSON(_ text: String) {
        let error = failure(text, as: .json)
        #expect(error?.type == .json)
        #expect(error?.value == text)
    }

    // MARK: - string

    @Test(arguments: ["", "  padded  ", "yes", "{\"a\": 1}", "line\nbreak", "ünïcödé"])
    func stringIsReturnedAsIs(_ text: String) throws {
        #expect(try value(text).rendered(as: .string) == text)
    }

    // MARK: - errors

    @Test func conversionErrorNamesKeyTypeAndValue() {
        let short = #expect(throws: ValueConversionError.self) {
            try ConfigValue(key: "retries", text: "many", source: .default).rendered(as: .int)
        }
        #expect(short?.description == "value of 'retries' is not a valid int: \"many\"")

        let long = String(repeating: "x", count: 100)
        let truncated = #expect(throws: ValueConversionError.self) {
            try ConfigValue(key: "blob", text: long, source: .remote).rendered(as: .json)
        }
        #expect(
            truncated?.description == "value of 'blob' is not a valid json: \"\(String(repeating: "x", count: 77))...\""
        )
    }

    @Test func everyTypeIsCovered() {
        #expect(ValueType.allCases.map(\.rawValue) == ["string", "bool", "number", "int", "json"])
        #expect(ValueSource.remote.rawValue == "remote")
        #expect(ValueSource.default.rawValue == "default")
        #expect(ValueSource.flag.rawValue == "flag")
    }
}
