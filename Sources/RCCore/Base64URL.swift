/// Base64url without padding (RFC 4648 §5, as RFC 7515 requires for every part of a JWT): `-` and `_`
/// instead of `+` and `/`, no `=`. Device ids and the operator tool's JWTs use it.
///
/// It lives here, written out, rather than as `Data.base64EncodedString()` because it was the only
/// thing RCCore took from FoundationEssentials, and linking that library cost every program 2.5 MB
/// of code and `rcagent get` a fifth of its start-up time (BENCHMARKS.md, issue 20).
package enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    package static func encode(_ bytes: some Sequence<UInt8>) -> String {
        Base64Digits.encode(Array(bytes), alphabet: alphabet, padded: false)
    }

    /// The bytes of `text`, or `nil` when it is not canonical unpadded base64url: standard base64's
    /// `+`, `/` and `=` are refused (a decoder that took them would hide an encoder's mistake), and so
    /// is a length no encoder makes or a last digit with bits that encode nothing.
    package static func decode(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 4 != 1 else { return nil }
        var decoder = Base64Digits.Decoder(capacity: digits.count)
        for digit in digits {
            guard let value = value(of: digit) else { return nil }
            decoder.append(value)
        }
        return decoder.finish()
    }

    private static func value(of digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): digit - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): digit - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): 62
        case UInt8(ascii: "_"): 63
        default: nil
        }
    }
}

/// The one base64 encoder: three bytes make one 24-bit group, read as four 6-bit digits of
/// `alphabet`; a short last group gives two or three digits, then `=` padding when `padded`.
/// Base64URL (JWTs, device ids) and DSSE envelopes use it with their alphabets.
package enum Base64Digits {
    package static func encode(_ input: [UInt8], alphabet: [UInt8], padded: Bool) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((input.count + 2) / 3 * 4)
        var index = 0
        while index < input.count {
            let count = min(3, input.count - index)
            var group = UInt32(input[index]) << 16
            if count > 1 { group |= UInt32(input[index + 1]) << 8 }
            if count > 2 { group |= UInt32(input[index + 2]) }
            for digit in 0...count {
                output.append(alphabet[Int((group >> (18 - 6 * UInt32(digit))) & 0x3f)])
            }
            if padded { output.append(contentsOf: repeatElement(UInt8(ascii: "="), count: 3 - count)) }
            index += 3
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Digits (their 6-bit values) to bytes, eight bits at a time: the loop both decoders share.
    package struct Decoder {
        private var output: [UInt8] = []
        private var group: UInt32 = 0
        private var bits = 0

        package init(capacity digits: Int) { output.reserveCapacity(digits * 3 / 4) }

        package mutating func append(_ value: UInt8) {
            group = group << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: group >> UInt32(bits)))
                group &= (1 << UInt32(bits)) - 1
            }
        }

        /// The bytes, or `nil` when the last digit has bits that encode nothing.
        package func finish() -> [UInt8]? { group == 0 ? output : nil }
    }
}
