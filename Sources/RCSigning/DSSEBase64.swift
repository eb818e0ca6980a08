import RCCore

/// Base64 as DSSE allows it (envelope.md: "either standard or URL-safe encoding, with or without
/// padding"): one alphabet per text, `=` only as the padding a length needs, no whitespace, and
/// no bits in the last digit that encode nothing. Encoding is standard base64 with padding, what
/// in-toto and Sigstore write. Linear in the text; nothing else is allocated.
public enum DSSEBase64 {
    private static let standard = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    public static func encode(_ bytes: [UInt8]) -> String {
        Base64Digits.encode(bytes, alphabet: standard, padded: true)
    }

    /// The decoded length of `text` at most, without decoding it (for size limits checked first).
    public static func decodedLengthBound(_ text: String) -> Int { text.utf8.count / 4 * 3 + 3 }

    /// The bytes of `text`, or why it is not base64 (a reason for an error that names the field).
    public static func decode(_ text: String) -> Result<[UInt8], Problem> {
        var digits = Array(text.utf8)
        var padding = 0
        while digits.last == UInt8(ascii: "="), padding < 2 {
            digits.removeLast()
            padding += 1
        }
        if padding > 0, (digits.count + padding) % 4 != 0 { return .failure(.badPadding) }
        guard digits.count % 4 != 1 else { return .failure(.badLength) }
        var decoder = Base64Digits.Decoder(capacity: digits.count)
        var urlSafe: Bool?
        for (offset, digit) in digits.enumerated() {
            let value: UInt8
            switch digit {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = digit - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = digit - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = digit - UInt8(ascii: "0") + 52
            case UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                let isURLSafe = digit == UInt8(ascii: "-") || digit == UInt8(ascii: "_")
                if let urlSafe, urlSafe != isURLSafe { return .failure(.mixedAlphabets(offset: offset)) }
                urlSafe = isURLSafe
                value = digit == UInt8(ascii: "+") || digit == UInt8(ascii: "-") ? 62 : 63
            default:
                return .failure(.badCharacter(offset: offset))
            }
            decoder.append(value)
        }
        return decoder.finish().map { .success($0) } ?? .failure(.danglingBits)
    }

    /// Why a text is not base64.
    public enum Problem: Error, CustomStringConvertible, Equatable {
        case badCharacter(offset: Int)
        case mixedAlphabets(offset: Int)
        case badPadding
        case badLength
        case danglingBits

        public var description: String {
            switch self {
            case let .badCharacter(offset): "is not base64 (a character outside the alphabet at offset \(offset))"
            case let .mixedAlphabets(offset):
                "is not base64 (standard and URL-safe digits mixed, at offset \(offset))"
            case .badPadding: "is not base64 (padding that does not complete a group of four)"
            case .badLength: "is not base64 (a length no encoder writes)"
            case .danglingBits: "is not base64 (the last digit has bits that encode nothing)"
            }
        }
    }
}
