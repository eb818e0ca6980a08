import RCCore
import Testing

/// The line splitter both ends of the control socket read with.
@Suite struct LineBufferTests {
    func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func linesSplitAnywhereComeOutWhole() {
        var lines = LineBuffer(maximumLength: 100)
        var out: [String] = []
        for byte in bytes("one\ntwo\n\nthree\nfour") {
            lines.append([byte])
            while case let .line(line) = lines.next() { out.append(String(decoding: line, as: UTF8.self)) }
        }
        #expect(out == ["one", "two", "", "three"])
        #expect(lines.hasPartialLine && lines.next() == .needMore)
        lines.append(bytes("\n"))
        #expect(lines.next() == .line(bytes("four")))
        #expect(!lines.hasPartialLine && lines.next() == .needMore)
    }

    @Test func manyLinesInOneAppend() {
        var lines = LineBuffer(maximumLength: 16)
        lines.append(Array(repeating: bytes("{\"op\":\"ping\"}\n"), count: 10_000).flatMap { $0 })
        var count = 0
        while case let .line(line) = lines.next() {
            #expect(line == bytes("{\"op\":\"ping\"}"))
            count += 1
        }
        #expect(count == 10_000)
    }

    @Test func aLineLongerThanTheLimitIsRefusedWithOrWithoutItsNewline() {
        var exact = LineBuffer(maximumLength: 4)
        exact.append(bytes("abcd\n"))
        #expect(exact.next() == .line(bytes("abcd")))

        var unended = LineBuffer(maximumLength: 4)
        unended.append(bytes("abcd"))
        #expect(unended.next() == .needMore)
        unended.append(bytes("e"))
        #expect(unended.next() == .tooLong)

        var ended = LineBuffer(maximumLength: 4)
        ended.append(bytes("ok\nabcde\nnext\n"))
        #expect(ended.next() == .line(bytes("ok")))
        #expect(ended.next() == .tooLong)
    }
}
