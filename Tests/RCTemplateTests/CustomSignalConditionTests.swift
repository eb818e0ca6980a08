import RCCore
import RCTemplate
import Testing

/// One custom-signal check: operator, the device's signal value, targets, expected outcome.
struct SignalCase: Sendable, CustomTestStringConvertible {
    let op: String
    let actual: String?
    let targets: [String]
    let expected: Bool

    init(_ op: String, _ actual: String?, _ targets: [String], _ expected: Bool) {
        self.op = op
        self.actual = actual
        self.targets = targets
        self.expected = expected
    }

    var testDescription: String { "\(op) \(actual.map { "\"\($0)\"" } ?? "nil") \(targets) → \(expected)" }
}

/// customSignal conditions with the Admin SDK's operator semantics.
@Suite struct CustomSignalConditionTests {
    static let stringCases: [SignalCase] = [
        SignalCase("STRING_CONTAINS", "hello world", ["lo w"], true),
        SignalCase("STRING_CONTAINS", "hello world", ["xyz", "wor"], true),
        SignalCase("STRING_CONTAINS", "hello world", ["xyz", "abc"], false),
        SignalCase("STRING_CONTAINS", "hello world", ["Hello"], false),
        SignalCase("STRING_CONTAINS", "hello", [""], true),
        // Code units, as in JavaScript: a decomposed "é" contains the letter "e".
        SignalCase("STRING_CONTAINS", "cafe\u{301}", ["e"], true),

        // True only when none of the targets is contained.
        SignalCase("STRING_DOES_NOT_CONTAIN", "hello world", ["xyz"], true),
        SignalCase("STRING_DOES_NOT_CONTAIN", "hello world", ["xyz", "abc"], true),
        SignalCase("STRING_DOES_NOT_CONTAIN", "hello world", ["xyz", "world"], false),
        SignalCase("STRING_DOES_NOT_CONTAIN", "hello world", ["world"], false),

        // Both sides trimmed (JavaScript white space), otherwise exact.
        SignalCase("STRING_EXACTLY_MATCHES", "beta", ["beta"], true),
        SignalCase("STRING_EXACTLY_MATCHES", "  beta\t\n", ["beta"], true),
        SignalCase("STRING_EXACTLY_MATCHES", "beta", [" beta "], true),
        SignalCase("STRING_EXACTLY_MATCHES", "\u{FEFF}beta\u{3000}", ["beta"], true),
        SignalCase("STRING_EXACTLY_MATCHES", "\u{85}beta", ["beta"], false),
        SignalCase("STRING_EXACTLY_MATCHES", "beta", ["alpha", "beta"], true),
        SignalCase("STRING_EXACTLY_MATCHES", "beta", ["bet"], false),
        SignalCase("STRING_EXACTLY_MATCHES", "Beta", ["beta"], false),
        SignalCase("STRING_EXACTLY_MATCHES", "be ta", ["beta"], false),
        // Unicode-scalar equality, not canonical equivalence (JavaScript's ===).
        SignalCase("STRING_EXACTLY_MATCHES", "caf\u{E9}", ["cafe\u{301}"], false),

        // Any target matching anywhere; a pattern that does not compile matches nothing.
        SignalCase("STRING_CONTAINS_REGEX", "store-12", [#"^store-\d+$"#], true),
        SignalCase("STRING_CONTAINS_REGEX", "berlin-store-12", [#"store-\d"#], true),
        SignalCase("STRING_CONTAINS_REGEX", "store-12", ["^kiosk"], false),
        SignalCase("STRING_CONTAINS_REGEX", "store-12", ["^kiosk", "12$"], true),
        SignalCase("STRING_CONTAINS_REGEX", "store-12", ["("], false),
        SignalCase("STRING_CONTAINS_REGEX", "store-12", ["[a-", "store"], true),
        SignalCase("STRING_CONTAINS_REGEX", "store-12", ["store", "("], true),
        // JavaScript's syntax where it differs from POSIX: lazy quantifiers, lookahead, ASCII-only \d.
        SignalCase("STRING_CONTAINS_REGEX", "store-12", [#"^s.+?-(?=\d)"#], true),
        SignalCase("STRING_CONTAINS_REGEX", "store-\u{661}", [#"-\d"#], false),
        SignalCase("STRING_CONTAINS_REGEX", "caf\u{E9}", ["^caf.$"], true),
        SignalCase("STRING_CONTAINS_REGEX", "", ["^$"], true),
        // Catastrophic backtracking (exponential in a backtracking engine) stops at the match limit and
        // counts as no match; the next target is still tried.
        SignalCase("STRING_CONTAINS_REGEX", String(repeating: "a", count: 400) + "!", ["^(a+)+$"], false),
        SignalCase("STRING_CONTAINS_REGEX", String(repeating: "a", count: 400) + "!", [#"^(a|a?)+$"#, "!$"], true),
    ]

    @Test(arguments: stringCases) func stringOperators(_ c: SignalCase) throws {
        #expect(try TemplateFixtures.signal(c.op, c.actual, c.targets) == c.expected)
    }

    /// (actual, target) → the expected results of LESS_THAN, LESS_EQUAL, EQUAL, NOT_EQUAL, GREATER_THAN, GREATER_EQUAL.
    static let comparisons = ["LESS_THAN", "LESS_EQUAL", "EQUAL", "NOT_EQUAL", "GREATER_THAN", "GREATER_EQUAL"]
    static let less = [true, true, false, true, false, false]
    static let equal = [false, true, true, false, false, true]
    static let greater = [false, false, false, true, true, true]
    static let never = [false, false, false, false, false, false]

    static func table(_ prefix: String, _ rows: [(String, String, [Bool])]) -> [SignalCase] {
        rows.flatMap { actual, target, results in
            zip(comparisons, results).map { SignalCase(prefix + $0, actual, [target], $1) }
        }
    }

    static let numericCases = table(
        "NUMERIC_",
        [
            ("9", "10", less),
            ("10", "9", greater),
            ("10", "10", equal),
            ("1.0", "1", equal),
            ("-2.5", "-2", less),
            ("1e3", "999.5", greater),
            ("0.1", ".1", equal),
            (" 42 ", "42", equal),
            ("0x10", "16", equal),
            ("+7", "7", equal),
            ("Infinity", "1e308", greater),
            ("1e999", "Infinity", equal),
            ("5.", "5", equal),
            ("-0", "0", equal),
            // JavaScript's Number(""): 0.
            ("", "0", equal),
            // Not numbers: every operator is false, NOT_EQUAL included.
            ("abc", "1", never),
            ("NaN", "1", never),
            ("1", "NaN", never),
            ("12abc", "12", never),
            ("1_000", "1000", never),
            ("inf", "1", never),
            ("1.2.3", "1", never),
        ])

    @Test(arguments: numericCases) func numericOperators(_ c: SignalCase) throws {
        #expect(try TemplateFixtures.signal(c.op, c.actual, c.targets) == c.expected)
    }

    @Test func numericOperatorsUseOnlyTheFirstTarget() throws {
        #expect(try TemplateFixtures.signal("NUMERIC_GREATER_THAN", "50", ["5", "100"]))
        #expect(try !TemplateFixtures.signal("NUMERIC_LESS_THAN", "50", ["5", "100"]))
        #expect(try TemplateFixtures.signal("NUMERIC_EQUAL", "5", ["5", "not a number"]))
        #expect(try !TemplateFixtures.signal("NUMERIC_EQUAL", "5", ["not a number", "5"]))
    }

    static let versionCases = table(
        "SEMANTIC_VERSION_",
        [
            ("1.2.3", "1.2.3", equal),
            ("1.2.3", "1.2.3.0", equal),
            ("1.2.3.0.0", "1.2.3", equal),
            ("1.2", "1.2.1", less),
            ("1.2.10", "1.2.9", greater),
            ("2", "1.99.99", greater),
            ("1.2.3.4.5", "1.2.3.4.4", greater),
            ("0.9", "1", less),
            // More than 5 segments on either side: false.
            ("1.2.3.4.5.6", "1", never),
            ("1", "1.2.3.4.5.6", never),
            ("1.2.3.4.5.0", "1.2.3.4.5", never),
            // Any segment that is not a number: false, even after the first difference.
            ("1.2.beta", "1.2.0", never),
            ("1.x", "2.0", never),
            ("1.2.3", "1.2.NaN", never),
            ("v1.2", "1.2", never),
            // A negative segment on either side: false, as in the Go, Java and Python Admin SDKs.
            ("5.12.-3.4", "5.12.0", never),
            ("5.12", "5.12.-3", never),
            ("-1", "0", never),
            ("1.-Infinity", "1", never),
        ])

    @Test(arguments: versionCases) func semanticVersionOperators(_ c: SignalCase) throws {
        #expect(try TemplateFixtures.signal(c.op, c.actual, c.targets) == c.expected)
    }

    @Test func semanticVersionOperatorsUseOnlyTheFirstTarget() throws {
        #expect(try TemplateFixtures.signal("SEMANTIC_VERSION_GREATER_EQUAL", "1.5", ["1.4", "2.0"]))
        #expect(try !TemplateFixtures.signal("SEMANTIC_VERSION_LESS_THAN", "1.5", ["1.4", "2.0"]))
    }

    static let allOperators =
        ["STRING_CONTAINS", "STRING_DOES_NOT_CONTAIN", "STRING_EXACTLY_MATCHES", "STRING_CONTAINS_REGEX"]
        + comparisons.map { "NUMERIC_" + $0 } + comparisons.map { "SEMANTIC_VERSION_" + $0 }

    @Test(arguments: allOperators) func missingSignalIsFalse(_ op: String) throws {
        #expect(try !TemplateFixtures.signal(op, nil, ["1"]))
        #expect(
            try !TemplateFixtures.holds(
                TemplateFixtures.customSignal(op, key: "other", targets: ["1"]), signals: ["k": "1"]))
    }

    @Test(arguments: allOperators) func noTargetsIsFalse(_ op: String) throws {
        #expect(try !TemplateFixtures.signal(op, "1", []))
    }

    @Test func missingKeyOrOperatorIsFalseAndNotReported() throws {
        let noKey = #"{"customSignal": {"customSignalOperator": "STRING_CONTAINS", "targetCustomSignalValues": [""]}}"#
        let noOperator = #"{"customSignal": {"customSignalKey": "k", "targetCustomSignalValues": [""]}}"#
        let unspecified = TemplateFixtures.customSignal("UNKNOWN", targets: [""])
        for condition in [noKey, noOperator, unspecified] {
            let result = try TemplateFixtures.evaluate(
                TemplateFixtures.template(condition: condition), signals: ["k": "x", "": "x"])
            #expect(result.values["p"] == "no")
            #expect(result.unsupportedConditions == [])
        }
    }

    @Test func unknownOperatorIsFalseAndReported() throws {
        let condition = TemplateFixtures.customSignal("STRING_STARTS_WITH", targets: ["a"])
        let result = try TemplateFixtures.evaluate(
            TemplateFixtures.template(condition: condition), signals: ["k": "abc"])
        #expect(result.values["p"] == "no")
        #expect(result.unsupportedConditions == ["c"])
    }

    @Test func targetsMustBeStrings() {
        let condition =
            #"{"customSignal": {"customSignalOperator": "NUMERIC_EQUAL", "customSignalKey": "k", "targetCustomSignalValues": [1]}}"#
        #expect(
            throws: DocumentError(
                document: TemplateFixtures.documentName,
                reason: "conditions[0].condition.customSignal.targetCustomSignalValues[0] must be a string, got number")
        ) {
            try TemplateFixtures.holds(condition, signals: ["k": "1"])
        }
    }
}
