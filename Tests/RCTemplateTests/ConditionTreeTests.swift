import RCCore
import RCTemplate
import Testing

/// orCondition / andCondition / true / false, nesting depth and unknown kinds.
@Suite struct ConditionTreeTests {
    static let t = #"{"true": {}}"#
    static let f = #"{"false": {}}"#

    static func or(_ children: String...) -> String {
        #"{"orCondition": {"conditions": ["# + children.joined(separator: ",") + "]}}"
    }

    static func and(_ children: String...) -> String {
        #"{"andCondition": {"conditions": ["# + children.joined(separator: ",") + "]}}"
    }

    @Test func constants() throws {
        #expect(try TemplateFixtures.holds(Self.t))
        #expect(try !TemplateFixtures.holds(Self.f))
    }

    @Test func orIsTrueWhenAnyChildIs() throws {
        #expect(try TemplateFixtures.holds(Self.or(Self.f, Self.t)))
        #expect(try TemplateFixtures.holds(Self.or(Self.t, Self.f)))
        #expect(try !TemplateFixtures.holds(Self.or(Self.f, Self.f)))
        #expect(try !TemplateFixtures.holds(Self.or()))
        #expect(try !TemplateFixtures.holds(#"{"orCondition": {}}"#))
    }

    @Test func andIsTrueWhenEveryChildIs() throws {
        #expect(try TemplateFixtures.holds(Self.and(Self.t, Self.t)))
        #expect(try !TemplateFixtures.holds(Self.and(Self.t, Self.f)))
        #expect(try !TemplateFixtures.holds(Self.and(Self.f, Self.t)))
        #expect(try TemplateFixtures.holds(Self.and()))
        #expect(try TemplateFixtures.holds(#"{"andCondition": {}}"#))
    }

    @Test func combinatorsNest() throws {
        let signal = TemplateFixtures.customSignal("STRING_EXACTLY_MATCHES", key: "store", targets: ["berlin-12"])
        let condition = Self.or(Self.and(signal, Self.t), Self.and(Self.f, Self.t))
        #expect(try TemplateFixtures.holds(condition, signals: ["store": "berlin-12"]))
        #expect(try !TemplateFixtures.holds(condition, signals: ["store": "paris-1"]))
    }

    /// A chain of `depth` nodes: depth − 1 combinators around a `true` leaf.
    static func chain(depth: Int, combinator: (String) -> String) -> String {
        (1..<depth).reduce(t) { inner, _ in combinator(inner) }
    }

    @Test func nestingUpToTenLevelsIsEvaluated() throws {
        #expect(try TemplateFixtures.holds(Self.chain(depth: 1) { Self.or($0) }))
        #expect(try TemplateFixtures.holds(Self.chain(depth: 10) { Self.or($0) }))
        #expect(try TemplateFixtures.holds(Self.chain(depth: 10) { Self.and($0) }))
        // Each step adds two levels (or, then and): 4 steps put the leaf at depth 9.
        #expect(try TemplateFixtures.holds(Self.chain(depth: 5) { Self.or(Self.f, Self.and(Self.t, $0)) }))
    }

    @Test func nestingDeeperThanTenIsFalse() throws {
        #expect(try !TemplateFixtures.holds(Self.chain(depth: 11) { Self.or($0) }))
        #expect(try !TemplateFixtures.holds(Self.chain(depth: 11) { Self.and($0) }))
        #expect(try !TemplateFixtures.holds(Self.chain(depth: 30) { Self.or($0) }))
        #expect(try !TemplateFixtures.holds(Self.chain(depth: 6) { Self.or(Self.f, Self.and(Self.t, $0)) }))
        // Too deep is false, not "unsupported": nothing is reported.
        let result = try TemplateFixtures.evaluate(
            TemplateFixtures.template(condition: Self.chain(depth: 11) { Self.or($0) }))
        #expect(result.unsupportedConditions == [])
    }

    @Test func tooDeepBranchOnlyFailsItself() throws {
        let deep = Self.chain(depth: 10) { Self.or($0) }  // its leaf sits at depth 11 below the outer or
        #expect(try !TemplateFixtures.holds(Self.or(deep)))
        #expect(try TemplateFixtures.holds(Self.or(deep, Self.t)))
    }

    @Test func unknownKindIsFalseAndReported() throws {
        let unknown = #"{"regexMatch": {"pattern": "x"}}"#
        let document = """
            {
              "conditions": [
                {"name": "future", "condition": \(unknown)},
                {"name": "mixed", "condition": \(Self.or(unknown, Self.t))},
                {"name": "fine", "condition": \(Self.t)}
              ],
              "parameters": {
                "a": {"defaultValue": {"value": "default"}, "conditionalValues": {"future": {"value": "future"}}},
                "b": {"defaultValue": {"value": "default"}, "conditionalValues": {"mixed": {"value": "mixed"}}}
              }
            }
            """
        let result = try TemplateFixtures.evaluate(document)
        #expect(result.values == ["a": "default", "b": "mixed"])
        #expect(result.unsupportedConditions == ["future", "mixed"])
    }

    @Test func emptyConditionObjectIsUnknown() throws {
        let result = try TemplateFixtures.evaluate(TemplateFixtures.template(condition: "{}"))
        #expect(result.values == ["p": "no"])
        #expect(result.unsupportedConditions == ["c"])
    }

    @Test func conditionMustBeAnObject() {
        #expect(
            throws: DocumentError(
                document: TemplateFixtures.documentName,
                reason: "conditions[0].condition.orCondition.conditions[1] must be an object, got string")
        ) {
            try TemplateFixtures.holds(#"{"orCondition": {"conditions": [{"true": {}}, "true"]}}"#)
        }
        #expect(
            throws: DocumentError(
                document: TemplateFixtures.documentName,
                reason: "conditions[0].condition.andCondition.conditions must be an array, got object")
        ) {
            try TemplateFixtures.holds(#"{"andCondition": {"conditions": {}}}"#)
        }
    }
}
