import RCCore
import Testing

/// RFC 9110 field names and values, checked by their bytes (issue 25 item 7).
@Suite struct HeaderFieldTests {
    @Test func valuesWithAControlByteOtherThanTabAreRefusedWithTheirPlace() {
        #expect(HeaderField.isValidValue("W/\"abc\" \t visible ü"))
        #expect(HeaderField.isValidValue(""))
        for bad in ["a\rb", "a\nb", "a\r\nb", "a\u{0}", "\u{7F}", "\u{1B}[31m"] {
            #expect(!HeaderField.isValidValue(bad), "\(bad.debugDescription)")
            #expect(HeaderField.problem(inValue: bad) != nil)
        }
        // "\r\n" is one Character in Swift: the check is by bytes, so it is still found, at its first byte.
        #expect(HeaderField.problem(inValue: "ab\r\nc")?.contains("CR at byte 2") == true)
        #expect(HeaderField.problem(inValue: "\u{0}")?.contains("NUL at byte 0") == true)
        #expect(HeaderField.problem(inValue: "a\u{1B}")?.contains("0x1B at byte 1") == true)
    }

    @Test func namesAreTokensAndLinesAreCheckedWhole() {
        #expect(HeaderField.isValidName("X-Device_Group.1~"))
        #expect(!HeaderField.isValidName(""))
        #expect(!HeaderField.isValidName("X Group"))
        #expect(!HeaderField.isValidName("X:Group"))
        #expect(HeaderField.problem(inLine: "If-None-Match: \"v1\"") == nil)
        #expect(HeaderField.problem(inLine: "If-None-Match: \"v1\rX-Injected: 1\"") != nil)
        #expect(HeaderField.problem(inLine: "no colon") == "not Name: value")
        #expect(HeaderField.problem(inLine: "Bad Name: v") == "the name is not an HTTP token")
    }
}
