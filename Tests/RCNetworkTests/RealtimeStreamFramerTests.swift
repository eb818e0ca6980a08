import RCFirebase
import Testing

/// RCFirebase's splitting of the realtime stream into its JSON objects.
@Suite struct RealtimeStreamFramerTests {
    static let stream = Array(#"[{"latestTemplateVersionNumber": "7"}, {"a": "}{\"", "b": {"c": 1}}]"#.utf8)

    @Test func objectsComeOutWholeHoweverTheTransferSplitsThem() {
        var whole = RealtimeStreamFramer()
        let expected = whole.append(Self.stream).map { String(decoding: $0, as: UTF8.self) }
        #expect(expected == [#"{"latestTemplateVersionNumber": "7"}"#, #"{"a": "}{\"", "b": {"c": 1}}"#])
        for size in 1...5 {
            var framer = RealtimeStreamFramer()
            var frames: [String] = []
            var start = 0
            while start < Self.stream.count {
                let end = min(start + size, Self.stream.count)
                frames += framer.append(Array(Self.stream[start..<end])).map { String(decoding: $0, as: UTF8.self) }
                start = end
            }
            #expect(frames == expected, "chunks of \(size) bytes")
            #expect(framer.bufferedCount == 0)
        }
    }

    @Test func anOversizedObjectIsSkippedToItsEndWithoutBeingHeld() {
        var framer = RealtimeStreamFramer()
        #expect(
            framer.append(
                Array("{\"a\": \"".utf8) + [UInt8](repeating: 0x61, count: RealtimeStreamFramer.maximumBuffered)
            ).isEmpty)
        #expect(framer.bufferedCount == 0, "the oversized partial object is dropped")
        #expect(framer.oversized == 1)
        // Its braces and strings are still followed: a "{" inside its string starts nothing.
        #expect(framer.append(Array(#"{"x": 1}"#.utf8)).isEmpty)
        #expect(
            framer.append(Array(#"", "b": {"c": 1}} {"b": 2}"#.utf8)).map { String(decoding: $0, as: UTF8.self) } == [
                #"{"b": 2}"#
            ], "the next object is read")
        #expect(framer.oversized == 1)
    }

    @Test func anEndlessObjectHoldsNoMoreThanTheLimit() {
        var framer = RealtimeStreamFramer()
        _ = framer.append(Array(#"{"latestTemplateVersionNumber": ""#.utf8))
        let chunk = [UInt8](repeating: 0x61, count: 16 << 10)
        for _ in 0..<1_000 {  // 16 MB
            #expect(framer.append(chunk).isEmpty)
            #expect(framer.bufferedCount <= RealtimeStreamFramer.maximumBuffered)
        }
        #expect(framer.oversized == 1)
    }
}
