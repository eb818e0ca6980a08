import RCCore
import Testing

/// Text from outside compared, ordered and hashed by its bytes (``ByteKey``), and the JSON reader's
/// bound on runs of combining marks, which keeps every `String` comparison after it linear.
@Suite struct ByteKeyTests {
    /// "a" and `count` combining marks whose classes descend (240, 233, 230, 220, 202), so
    /// normalizing them reorders at every step: the text that cost seconds per comparison.
    static func marks(_ count: Int) -> String {
        let cycle: [Unicode.Scalar] = ["\u{345}", "\u{35C}", "\u{301}", "\u{316}", "\u{327}"]
        var text = "a"
        for index in 0..<count { text.unicodeScalars.append(cycle[index % cycle.count]) }
        return text
    }

    @Test func lookAlikesAreDifferentKeys() {
        let kelvin = "\u{212A}"  // KELVIN SIGN: canonically equivalent to K
        #expect(kelvin == "K", "Swift's String equality says they are one")
        #expect(ByteKey(kelvin) != ByteKey("K"))
        #expect(ByteKey("caf\u{E9}") != ByteKey("cafe\u{301}"))
        #expect(Set([ByteKey(kelvin), ByteKey("K"), ByteKey("K")]).count == 2)
        var byKey: [ByteKey: Int] = [:]
        byKey[ByteKey("device-K1")] = 1
        byKey[ByteKey("device-\u{212A}1")] = 2
        #expect(byKey[ByteKey("device-K1")] == 1 && byKey.count == 2)
        #expect("K".sameBytes(as: "K") && !"K".sameBytes(as: kelvin))
    }

    @Test func orderIsTheOrderOfTheBytes() {
        let texts = ["b", "\u{212A}", "a", "K", "\u{E9}", "e\u{301}", ""]
        let sorted = texts.map { ByteKey($0) }.sorted().map(\.text)
        #expect(
            sorted.map { Array($0.utf8) } == texts.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) })
        #expect("K".precedesByBytes("\u{212A}") && !"\u{212A}".precedesByBytes("K"))
    }

    /// `hasPrefix` compares characters: a combining mark after the `/` hides the prefix.
    @Test func aPrefixIsAPrefixOfBytes() {
        let topic = "rcagent/status/\u{301}device"
        #expect(!topic.hasPrefix("rcagent/status/"))
        #expect(topic.hasBytePrefix("rcagent/status/"))
        #expect(!"rcagent".hasBytePrefix("rcagent/"))
    }

    /// 100 KB of marks: compared and hashed by bytes in linear time (as a String it cost seconds).
    @Test func longRunsOfMarksAreOrdinaryKeys() {
        let a = Self.marks(50_000)
        let b = Self.marks(50_000) + "x"
        var set = Set<ByteKey>()
        set.insert(ByteKey(a))
        set.insert(ByteKey(b))
        #expect(set.count == 2 && set.contains(ByteKey(a)))
        #expect(ByteKey(a) < ByteKey(b))
    }

    @Test func theReaderRefusesMoreThan30MarksInARow() throws {
        let fine = "{\"\(Self.marks(30))\":\"\(Self.marks(30))\"}"
        #expect(try JSONValue.parse(fine)[Self.marks(30)] == .string(Self.marks(30)))
        for text in [
            "{\"\(Self.marks(31))\":1}", "{\"k\":\"\(Self.marks(31))\"}", "[\"\(Self.marks(50_000))\"]",
            // Escaped marks count the same.
            "{\"k\":\"a" + String(repeating: "\\u0301\\u0316", count: 16) + "\"}",
        ] {
            #expect {
                try JSONValue.parse(text)
            } throws: { error in
                "\(error)".contains("string with more than 30 combining marks in a row at line 1")
            }
        }
        // Marks broken up by other letters are fine, however many.
        let broken = String(repeating: String(Self.marks(30).dropFirst()) + "b", count: 1_000)
        #expect(try JSONValue.parse("[\"\(broken)\"]") == .array([.string(broken)]))
    }

    @Test func membersAreSortedByBytesAndEquivalentNamesRefused() throws {
        // By bytes, KELVIN SIGN (E2 84 AA) sorts last; as a String it would sort as "K", first.
        let value = try JSONValue.parse(#"{"b":1,"\u212a":2,"a":3}"#)
        #expect(value.objectMembers?.map { Array($0.key.utf8) } == ["a", "b", "\u{212A}"].map { Array($0.utf8) })
        for text in [#"{"K":1,"\u212a":2}"#, #"{"caf\u00e9":1,"cafe\u0301":2}"#, #"{"a":1,"a":2}"#] {
            #expect {
                try JSONValue.parse(text)
            } throws: { error in
                "\(error)".contains("duplicate member name")
            }
        }
        #expect(try JSONValue.parse(#"{"K":1}"#)["\u{212A}"] == nil, "looked up by bytes")
        #expect(JSONValue.string("\u{212A}") != .string("K"))
        #expect(JSONValue.string("caf\u{E9}") != .string("cafe\u{301}"))
    }
}
