import RCCore
import Testing

/// `JSONStringTracker`: which bytes of JSON text belong to strings, across escapes and chunks.
@Suite struct JSONStringTrackerTests {
    /// The bytes the tracker marks as string bytes, as text ("s" in a string, "." outside).
    private func marks(_ text: String, chunks: Int = 1) -> String {
        var tracker = JSONStringTracker()
        let bytes = Array(text.utf8)
        var out = ""
        // The same tracker over the text split in `chunks` pieces: its state carries over.
        let size = max(1, bytes.count / chunks)
        for start in stride(from: 0, to: bytes.count, by: size) {
            for byte in bytes[start..<min(start + size, bytes.count)] { out += tracker.take(byte) ? "s" : "." }
        }
        return out
    }

    @Test func quotesAndWhatIsBetweenThemAreStringBytes() {
        #expect(marks(#"{"a": 1}"#) == ".sss....")
        #expect(marks(#"["x",""]"#) == ".sss.ss.")
    }

    @Test func anEscapedQuoteOrBackslashDoesNotEndTheString() {
        #expect(marks(#""a\"b" 1"#) == "ssssss..")
        #expect(marks(#""\\" 1"#) == "ssss..")
    }

    @Test func itsStateCarriesOverBetweenChunks() {
        let text = #"{"k\"}": "v\\", "n": {}}"#
        for chunks in 1...text.utf8.count { #expect(marks(text, chunks: chunks) == marks(text)) }
    }

    @Test func aStringStillOpenAtTheEndIsSaid() {
        var tracker = JSONStringTracker()
        for byte in #"{"open"#.utf8 { _ = tracker.take(byte) }
        #expect(tracker.inString)
    }
}
