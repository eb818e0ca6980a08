import RCCore
import Testing

/// `sameBytes(as:)` and `precedesByBytes(_:)` compare eight bytes at a time: they must say what a
/// byte-by-byte comparison says, for every length (the words and the tail) and wherever the first
/// difference falls.
@Suite struct ByteCompareTests {
    /// Pairs of texts of 0 to 40 bytes sharing a prefix of random length, from ASCII letters and a
    /// few multi-byte characters (so differences fall inside and between UTF-8 sequences).
    static func pairs() -> [(String, String)] {
        var random = SplitMix64(seed: 30)
        let pieces: [String] = ["a", "b", "z", "A", "~", "\u{7f}", "\u{e9}", "\u{2028}", "\u{1F600}", "\u{0}"]
        func text(_ count: Int) -> String {
            var text = ""
            for _ in 0..<count { text += pieces[Int(random.next() % UInt64(pieces.count))] }
            return text
        }
        var pairs: [(String, String)] = []
        for _ in 0..<4_000 {
            let prefix = text(Int(random.next() % 12))
            pairs.append((prefix + text(Int(random.next() % 5)), prefix + text(Int(random.next() % 5))))
        }
        return pairs
    }

    @Test func wordComparisonsAgreeWithByteComparisons() {
        for (a, b) in Self.pairs() {
            let x = Array(a.utf8)
            let y = Array(b.utf8)
            #expect(a.sameBytes(as: b) == (x == y), "\(x) \(y)")
            #expect(a.precedesByBytes(b) == x.lexicographicallyPrecedes(y), "\(x) \(y)")
            #expect(b.precedesByBytes(a) == y.lexicographicallyPrecedes(x), "\(y) \(x)")
            #expect(a.sameBytes(as: a) && !a.precedesByBytes(a))
        }
    }

    /// The first difference in each byte of a word and of the tail: the most significant byte
    /// decides, whatever the machine's byte order.
    @Test(arguments: 0..<19)
    func theFirstDifferingByteDecides(position: Int) {
        var low = Array(repeating: UInt8(ascii: "m"), count: 19)
        var high = low
        low[position] = UInt8(ascii: "a")
        high[position] = UInt8(ascii: "b")
        // Later bytes say the opposite: only the first difference may count.
        if position + 1 < 19 {
            low[position + 1] = UInt8(ascii: "z")
            high[position + 1] = UInt8(ascii: "a")
        }
        let a = String(decoding: low, as: UTF8.self)
        let b = String(decoding: high, as: UTF8.self)
        #expect(a.precedesByBytes(b) && !b.precedesByBytes(a) && !a.sameBytes(as: b))
    }
}
