import RCCore
import Testing

/// Inputs the parser fuzz targets (Sources/RCFuzzing) caught; each is also in Tests/Fuzz/corpus.
@Suite struct ParserFuzzRegressionTests {
    @Test func sizeWithMultiCharacterUppercaseIsRefusedNotACrash() {
        // "ß".uppercased() is "SS": forming a Character from it trapped.
        #expect(SizeText.parse("1ß") == nil)
        #expect(SizeText.parse("1ŉ") == nil)
        #expect(SizeText.parse("2k") == 2048)
    }

    @Test func impossibleDatesAreRefused() {
        #expect(Timestamp(iso8601: "2029-02-29T00:00:00Z") == nil)
        #expect(Timestamp(iso8601: "2026-04-31T00:00:00Z") == nil)
        #expect(Timestamp(iso8601: "2100-02-29T00:00:00Z") == nil)
        #expect(Timestamp(iso8601: "2028-02-29T00:00:00Z")?.iso8601 == "2028-02-29T00:00:00Z")
        #expect(Timestamp(iso8601: "2000-02-29T12:00:00Z")?.iso8601 == "2000-02-29T12:00:00Z")
    }

    @Test func brokerAddressesNeedAHostAndAPortInRange() {
        #expect(MQTTAddress.parse("mqtt://:1883") == nil)
        #expect(MQTTAddress.parse("mqtt://broker.test:8888884") == nil)
        #expect(MQTTAddress.parse("mqtt://broker.test:0") == nil)
        #expect(MQTTAddress.parse("mqtt://broker.test:-1") == nil)
        #expect(MQTTAddress.parse("mqtt://broker.test:abc") == nil)
        #expect(
            MQTTAddress.parse("mqtts://broker.test:8884/x").map { "\($0.tls) \($0.host) \($0.port)" }
                == "true broker.test 8884")
        #expect(MQTTAddress.parse("mqtt://[::1]").map { "\($0.host) \($0.port)" } == "[::1] 1883")
        #expect(MQTTAddress.parse("mqtt://[::1]:1884").map { "\($0.host) \($0.port)" } == "[::1] 1884")
    }

    @Test(arguments: [
        ("{\"a\": 1,}", "expected a member name, found '}' at line 1, column 9 (byte 8)"),
        ("[1,\n 2,]", "expected a value, found ']' at line 2, column 4 (byte 7)"),
        ("\"\\x41\"", "invalid escape \\'x' at line 1, column 2 (byte 1)"),
        ("[\"\\ud800\"]", "invalid \\u escape: unpaired surrogate at line 1, column 3 (byte 2)"),
        ("{\"a\": -}", "invalid number, expected a digit at line 1, column 8 (byte 7)"),
        ("[01]", "invalid number, leading zero at line 1, column 2 (byte 1)"),
        ("1e999", "number 1e999 out of range at line 1, column 1 (byte 0)"),
        ("{\"a\": \"b", "unterminated string at line 1, column 7 (byte 6)"),
        ("{} {}", "unexpected '{' after the value at line 1, column 4 (byte 3)"),
        ("", "expected a value, found end of input at line 1, column 1 (byte 0)"),
    ])
    func jsonErrorsSayWhatAndWhere(text: String, reason: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
        #expect((try? JSONValue.parse(text)) == nil)
        do {
            _ = try JSONValue.parse(text)
        } catch {
            #expect(error.reason == reason)
        }
    }

    @Test func invalidUTF8InAStringIsRefusedWithItsPlace() {
        let bytes: [UInt8] = Array("[\"ab".utf8) + [0xFF] + Array("\"]".utf8)
        do {
            _ = try JSONValue.parse(bytes)
            Issue.record("accepted invalid UTF-8")
        } catch {
            #expect(error.reason == "invalid UTF-8 at line 1, column 5 (byte 4)")
        }
        #expect((try? JSONValue.parse(Array("[\"é😀\"]".utf8))) == .array([.string("é😀")]))
    }

    @Test func deepNestingIsRefusedNotAStackOverflow() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect((try? JSONValue.parse(deep)) == nil)
        let depth = JSONValue.maximumDepth
        let fine = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        #expect((try? JSONValue.parse(fine)) != nil)
    }

    /// The typed fast path (JSONDecoder, now gone) skipped members it did not decode; the one reader
    /// checks every member.
    @Test func garbageInIgnoredMembersIsRefused() {
        for text in [
            "{\"entries\": {}, \"ignored\": \"\\x41\"}", "{\"entries\": {\"a\": \"1\"}, \"ignored\": [1,],}",
            "{\"state\": \"NO_CHANGE\", \"n\": 01}",
        ] {
            #expect(throws: DocumentError.self) { try RemoteDocument.parse(Array(text.utf8), name: "remote.json") }
        }
        let bytes: [UInt8] = Array("{\"entries\": {}, \"ignored\": \"v".utf8) + [0xFF] + Array("\"}".utf8)
        #expect(throws: DocumentError.self) { try RemoteDocument.parse(bytes, name: "remote.json") }
    }
}
