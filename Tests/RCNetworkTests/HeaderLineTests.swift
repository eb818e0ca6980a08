import Testing

@testable import RCHTTP

/// Response header lines read by their bytes (``HeaderLine``): a header named with a long run of
/// combining marks used to be compared and trimmed as a `String`, at a cost in the square of its
/// length (64 KB: 0.6 s per comparison, several per line and per lookup); it is now dropped, as a
/// name that is not an HTTP token, after one pass over its bytes.
@Suite struct HeaderLineTests {
    func parse(_ text: String) -> HeaderLine {
        Array(text.utf8).withUnsafeBufferPointer { HeaderLine.parse($0) }
    }

    @Test func fieldsStatusLinesAndTheEnd() {
        #expect(parse("ETag:  \"v1\" \r\n") == .field(name: "etag", value: "\"v1\""))
        #expect(parse("Retry-After:\t5\r\n") == .field(name: "retry-after", value: "5"))
        #expect(parse("X-Empty:\r\n") == .field(name: "x-empty", value: ""))
        #expect(parse("HTTP/1.1 304 Not Modified\r\n") == .status)
        #expect(parse("\r\n") == .end)
        #expect(parse("\n") == .end)
        #expect(parse("no colon here\r\n") == .ignored)
    }

    @Test func aNameThatIsNotATokenIsDropped() {
        let marks = String(repeating: "\u{0301}\u{0316}", count: 32_000)
        #expect(parse(marks + ": x\r\n") == .ignored)
        #expect(parse("e\u{0301}tag: x\r\n") == .ignored)
        #expect(parse("\u{212A}ey: x\r\n") == .ignored, "KELVIN SIGN is not the letter K")
        #expect(parse(": x\r\n") == .ignored)
    }

    @Test func aValueHTTPCannotCarryIsDropped() {
        #expect(parse("ETag: \"a\rb\"\r\n") == .ignored)
        #expect(parse("ETag: \"a\u{0}b\"\r\n") == .ignored)
        // A value may hold UTF-8 (obs-text), combining marks included: it is kept as bytes.
        #expect(parse("X-Note: caf\u{0065}\u{0301}\r\n") == .field(name: "x-note", value: "cafe\u{0301}"))
    }

    @Test func lookupsCompareNamesByBytes() {
        let response = HTTPResponse(status: 200, headers: [("etag", "\"v1\"")], body: [])
        #expect(response.header("ETag") == "\"v1\"")
        #expect(response.header("e\u{0301}tag") == nil)
    }
}
