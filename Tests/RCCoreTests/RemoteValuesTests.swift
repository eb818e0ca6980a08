import RCCore
import Testing

/// A document's values are held in the order of their keys' bytes, each key once, as the store
/// keeps them: what a reader of ``RemoteValues`` may count on however the values were given.
@Suite struct RemoteValuesTests {
    private func bytes(_ values: RemoteValues) -> [[UInt8]] { values.keys.map { Array($0.utf8) } }

    @Test func valuesGivenInAnyOrderAreHeldInTheOrderOfTheBytes() {
        // "é" precomposed (C3 A9) and decomposed ("e" + CC 81): one key for Swift's `==`, two here.
        let keys = ["b", "\u{e9}", "e\u{301}", "a", "Z", "ab", "", "0123456789abcdefX", "0123456789abcdef"]
        let values = RemoteValues(keys.map { (key: $0, value: "v") })
        #expect(bytes(values) == keys.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) })
    }

    @Test func ofTwoEntriesWithTheSameKeyTheLastWins() {
        let values = RemoteValues([("k", "first"), ("a", "x"), ("k", "second"), ("k", "third")])
        #expect(values.count == 2)
        #expect(values["k"] == "third")
        #expect(values == ["a": "x", "k": "third"])
    }

    @Test func aKeyIsFoundOnlyByItsOwnBytes() {
        let values: RemoteValues = ["\u{e9}": "precomposed", "e\u{301}": "decomposed", "m": "middle"]
        #expect(values["\u{e9}"] == "precomposed")
        #expect(values["e\u{301}"] == "decomposed")
        #expect(values["m"] == "middle")
        #expect(values["e"] == nil)
        #expect(values[""] == nil)
        #expect(RemoteValues()["m"] == nil)
    }

    @Test func valuesEqualOnlyWhenTheirBytesAre() {
        #expect(RemoteValues(["k": "\u{e9}"]) != RemoteValues(["k": "e\u{301}"]))
        #expect(RemoteValues(["\u{e9}": "v"]) != RemoteValues(["e\u{301}": "v"]))
        #expect(RemoteValues(["k": "v", "j": "w"]) == RemoteValues([("j", "w"), ("k", "v")]))
    }

    /// Many keys sharing their first 16 bytes, and random ones: the order is the bytes' whatever
    /// decides it (the prefix or the whole key).
    @Test func manyKeysAreHeldInTheOrderOfTheBytes() {
        var random = SplitMix64(seed: 7)
        let keys = (0..<2_000).map { _ in
            let long = random.next() % 2 == 0 ? "0123456789abcdef" : ""
            return long + String(random.next() % 1_000_000, radix: 36)
        }
        let values = RemoteValues(keys.map { (key: $0, value: "") })
        #expect(bytes(values) == Set(keys).map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) })
    }
}
