import Glibc
import Testing

@testable import RCCore

/// The one reader of untrusted JSON: nesting limit, duplicate names, escapes, and where errors point.
@Suite struct JSONReaderTests {
    private func nested(_ depth: Int, open: String = "[", close: String = "]", inner: String = "") -> String {
        String(repeating: open, count: depth) + inner + String(repeating: close, count: depth)
    }

    @Test func nestingUpToTheLimitIsAccepted() throws {
        let depth = JSONValue.maximumDepth
        #expect(depth <= 100, "far below any stack: the tree's writer, comparison and release recurse")
        _ = try JSONValue.parse(nested(depth))
        _ = try JSONValue.parse(nested(depth, open: #"{"k":"#, close: "}", inner: "1"))
        // Mixed shapes count the same way.
        let mixed = String(repeating: #"[{"a":"#, count: depth / 2) + "0" + String(repeating: "}]", count: depth / 2)
        _ = try JSONValue.parse(mixed)
    }

    @Test(arguments: [
        ("[", "]", ""), (#"{"k":"#, "}", "1"), (#"[{"a":"#, "}]", "0"), (#"{"a":["#, "]}", "0"),
    ])
    func nestingPastTheLimitIsRefusedWithItsPlace(_ open: String, _ close: String, _ inner: String) {
        for depth in [JSONValue.maximumDepth + 1, 430, 512, 100_000] {
            let text = nested(depth, open: open, close: close, inner: inner)
            let error = #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
            #expect(error?.reason.hasPrefix("nesting deeper than \(JSONValue.maximumDepth) levels at line 1") == true)
        }
    }

    @Test func duplicateMemberNamesAreRefused() {
        let error = #expect(throws: JSONParseError.self) { try JSONValue.parse(#"{"x": {"a": 1, "b": 2, "a": 3}}"#) }
        #expect(error?.reason == #"duplicate member name "a" in the object at line 1, column 7 (byte 6)"#)
    }

    /// Members come out in byte order whatever order they came in (already sorted, reversed,
    /// mixed), and a name given twice is refused in each, adjacent or not.
    @Test(arguments: [
        (#"{"a": 1, "b": 2, "c": 3}"#, true), (#"{"c": 1, "b": 2, "a": 3}"#, true),
        (#"{"b": 1, "c": 2, "a": 3}"#, true),
        (#"{"a": 1, "b": 2, "b": 3}"#, false), (#"{"b": 1, "a": 2, "b": 3}"#, false), (#"{"a": 1, "a": 2}"#, false),
    ])
    func membersAreSortedAndDuplicatesRefusedInAnyInputOrder(_ text: String, _ valid: Bool) throws {
        guard valid else {
            #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
            return
        }
        #expect(try JSONValue.parse(text).objectMembers?.map(\.key) == ["a", "b", "c"])
    }

    /// The members of an object are sorted in place (the reader takes them out of the object being
    /// read): a large object still comes back in byte order, each value with its name, and a name given
    /// twice among many is still refused where the object starts.
    @Test(arguments: [false, true])
    func aLargeObjectIsSortedByNameAndADuplicateAmongItsMembersIsRefused(alreadyInOrder: Bool) throws {
        let byBytes = (0..<10_000).map { "k\($0)" }.sorted {
            Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8))
        }
        let names = alreadyInOrder ? byBytes : byBytes.reversed()
        let text = "{" + names.map { "\"\($0)\":\"v-\($0)\"" }.joined(separator: ",") + "}"
        let members = try #require(try JSONValue.parse(text).objectMembers)
        #expect(members.map(\.key) == byBytes)
        #expect(members.allSatisfy { $0.value == .string("v-" + $0.key) })
        let array = try JSONValue.parse("[" + names.map { "\"\($0)\"" }.joined(separator: ",") + "]")
        #expect(array == .array(names.map(JSONValue.string)))
        let twice = #"{"x": "# + text.dropLast() + #","k2500":0}}"#
        let error = #expect(throws: JSONParseError.self) { try JSONValue.parse(twice) }
        #expect(error?.reason == #"duplicate member name "k2500" in the object at line 1, column 7 (byte 6)"#)
    }

    /// Swift compares strings by canonical equivalence: "é" and "e" + U+0301 would become one key.
    @Test(arguments: [("\u{E9}", "e\u{301}"), ("\u{212B}", "\u{C5}"), ("\u{1E9B}\u{323}", "\u{17F}\u{323}\u{307}")])
    func namesEqualUpToNormalizationAreRefused(_ a: String, _ b: String) {
        #expect(Array(a.utf8) != Array(b.utf8))
        let error = #expect(throws: JSONParseError.self) { try JSONValue.parse("{\"\(a)\": 1, \"\(b)\": 2}") }
        #expect(error?.reason.contains("different Unicode normalization forms") == true)
    }

    /// The string scan skips eight bytes at a time only when none of them is a quote, a backslash, a
    /// control character or a byte over 0x7F: every byte value, at every place in the word.
    @Test func theWordScanStopsAtEveryByteThatEndsPlainASCII() {
        let plain = UInt64(0x61) &* 0x0101_0101_0101_0101  // "aaaaaaaa"
        #expect(JSONReader.Scanner.isPlainASCII(plain))
        for byte in UInt64(0)...0xFF {
            let isPlain = byte >= 0x20 && byte < 0x80 && byte != 0x22 && byte != 0x5C
            for place in UInt64(0)..<8 {
                let word = plain & ~(0xFF << (place * 8)) | byte << (place * 8)
                #expect(JSONReader.Scanner.isPlainASCII(word) == isPlain, "byte \(byte) at \(place)")
            }
        }
    }

    /// Whatever ends or interrupts plain ASCII (an escape, a multi-byte character, a control
    /// character, the closing quote) is found at every offset, before, in and after whole words.
    @Test func stringsReadTheSameWhereverTheirSpecialBytesFall() throws {
        for length in 0..<24 {
            let before = String(repeating: "a", count: length)
            #expect(try JSONValue.parse("[\"\(before)\"]") == .array([.string(before)]))
            #expect(try JSONValue.parse("[\"\(before)\\n\(before)\"]") == .array([.string(before + "\n" + before)]))
            #expect(try JSONValue.parse("[\"\(before)é\(before)\"]") == .array([.string(before + "é" + before)]))
            let error = #expect(throws: JSONParseError.self) { try JSONValue.parse("[\"\(before)\u{1}\(before)\"]") }
            #expect(
                error?.reason
                    == "control character byte 0x1 in a string at line 1, column \(length + 3) (byte \(length + 2))")
            #expect(throws: JSONParseError.self) {
                try JSONValue.parse("[\"\(before)\u{FF}\"]".utf8.map { $0 == 0xC3 ? 0xFF : $0 })
            }
        }
    }

    /// A name is ASCII or not by its text, escapes decoded: one that is only written with an escape
    /// is still checked against its other normalization forms.
    @Test(arguments: [
        #"{"\u00e9": 1, "e\u0301": 2}"#, #"{"a": 0, "\u00e9": 1, "e\u0301": 2}"#, #"{"e\u0301": 1, "a": 0, "é": 2}"#,
    ])
    func escapedNamesEqualUpToNormalizationAreRefused(_ text: String) {
        let error = #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
        #expect(error?.reason.contains("different Unicode normalization forms") == true)
    }

    @Test func escapesAreDecoded() throws {
        #expect(
            try JSONValue.parse(#"["\u00e9\ud83d\ude00", "a\u0000b", "\"\\\/\b\f\n\r\t", "x\u0301"]"#)
                == .array([.string("é😀"), .string("a\u{0}b"), .string("\"\\/\u{8}\u{c}\n\r\t"), .string("x\u{301}")]))
        // Escaped and raw text of the same name is the same name.
        #expect(throws: JSONParseError.self) { try JSONValue.parse(#"{"\u0061": 1, "a": 2}"#) }
    }

    @Test(arguments: [
        (#"["\ud800"]"#, #"invalid \u escape: unpaired surrogate at line 1, column 3 (byte 2)"#),
        (#"["\udc00x"]"#, #"invalid \u escape: unpaired surrogate at line 1, column 3 (byte 2)"#),
        (#"["\ud800\u0041"]"#, #"invalid \u escape: unpaired surrogate at line 1, column 3 (byte 2)"#),
        ("[\"a\nb\"]", "control character byte 0xa in a string at line 1, column 4 (byte 3)"),
        ("{\n  \"a\": tru }", "invalid literal, expected true at line 2, column 8 (byte 9)"),
        ("[1,]", "expected a value, found ']' at line 1, column 4 (byte 3)"),
        ("[-]", "invalid number, expected a digit at line 1, column 3 (byte 2)"),
        ("1e999", "number 1e999 out of range at line 1, column 1 (byte 0)"),
    ])
    func errorsSayWhatAndWhere(_ text: String, _ reason: String) {
        let error = #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
        #expect(error?.reason == reason)
    }

    @Test(arguments: [
        ("123456789012345678", JSONValue.integer(123_456_789_012_345_678)),
        ("-123456789012345678", .integer(-123_456_789_012_345_678)),
        ("9223372036854775808", .double(9_223_372_036_854_775_808)),
        ("-0", .integer(0)), ("0.0", .double(0)), ("1E+2", .double(100)),
    ])
    func numbers(_ text: String, _ expected: JSONValue) throws {
        #expect(try JSONValue.parse(text) == expected)
    }

    /// The deepest document accepted is parsed, written, compared and released on a thread with a
    /// quarter of the stack of the daemon's connection threads (512 KiB), in a debug build.
    @Test func theDeepestDocumentFitsASmallStack() throws {
        let depth = JSONValue.maximumDepth
        let text = String(repeating: #"{"k":["#, count: depth / 2) + "1" + String(repeating: "]}", count: depth / 2)
        let finished = onThread(stackSize: 128 * 1024) {
            guard let value = try? JSONValue.parse(text), let again = try? JSONValue.parse(value.compactText) else {
                return false
            }
            return value == again && value.compactText == text
        }
        #expect(finished)
    }

    /// Runs `body` on a new thread with `stackSize` bytes of stack and returns its result.
    private func onThread(stackSize: Int, _ body: @escaping () -> Bool) -> Bool {
        final class Box {
            let body: () -> Bool
            var result = false
            init(_ body: @escaping () -> Bool) { self.body = body }
        }
        let box = Box(body)
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setstacksize(&attributes, stackSize)
        var thread = pthread_t()
        let context = Unmanaged.passRetained(box).toOpaque()
        guard
            pthread_create(
                &thread, &attributes,
                { raw in
                    let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
                    box.result = box.body()
                    return nil
                }, context) == 0
        else { return false }
        pthread_join(thread, nil)
        return box.result
    }
}
