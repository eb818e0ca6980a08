import Testing

@testable import RCCore

/// RCCore's own base64url (device ids, the operator tool's JWTs): RFC 4648 §5 vectors, round trips
/// over every short length, and a decoder that takes only what the encoder makes.
@Suite struct Base64URLTests {
    @Test func encodesTheRFC4648Vectors() {
        // RFC 4648 §10, with the padding dropped.
        let vectors = [
            "": "", "f": "Zg", "fo": "Zm8", "foo": "Zm9v", "foob": "Zm9vYg", "fooba": "Zm9vYmE", "foobar": "Zm9vYmFy",
        ]
        for (text, encoded) in vectors {
            #expect(Base64URL.encode(Array(text.utf8)) == encoded)
            #expect(Base64URL.decode(encoded) == Array(text.utf8))
        }
        // The two URL-safe digits stand where standard base64 has "+" and "/".
        #expect(Base64URL.encode([0xfb, 0xef, 0xff]) == "--__")
    }

    @Test func roundTripsEveryLengthAndByte() {
        for length in 0..<70 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 73 &+ length) }
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes)
        }
        let all = (0...255).map { UInt8($0) }
        #expect(Base64URL.decode(Base64URL.encode(all)) == all)
    }

    @Test(arguments: [
        "a",  // a length no encoder makes
        "Zm9v=",  // padding
        "+/8",  // standard base64's digits
        "Zm 9v",  // white space
        "Zh",  // "f" with bits in the last digit that encode nothing
        "Zm9",  // the same for two bytes
        "Zm9vé",  // not ASCII
    ])
    func rejectsWhatNoEncoderMakes(_ text: String) {
        #expect(Base64URL.decode(text) == nil)
    }
}
