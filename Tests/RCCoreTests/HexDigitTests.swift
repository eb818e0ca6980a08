import RCCore
import Testing

/// `UInt8.hexDigitValue`: the 22 ASCII hexadecimal digits and nothing else, over every byte.
@Suite struct HexDigitTests {
    @Test func onlyTheTwentyTwoDigitsHaveAValue() {
        let digits = Array("0123456789abcdef".utf8)
        for byte in UInt8.min...UInt8.max {
            let lower = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "F") ? byte + 32 : byte
            let expected = digits.firstIndex(of: lower).map { UInt8($0) }
            #expect(byte.hexDigitValue == expected, "byte \(byte)")
        }
    }
}
