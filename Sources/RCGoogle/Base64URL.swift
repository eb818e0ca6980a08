import FoundationEssentials

/// Base64url without padding (RFC 4648 §5, as RFC 7515 requires for every part of a JWT): `-` and `_`
/// instead of `+` and `/`, no `=`. Standard base64 in a JWT is what the seed's scripts got wrong.
package enum Base64URL {
    package static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var text = Data(bytes).base64EncodedString()
        text.replace("+", with: "-")
        text.replace("/", with: "_")
        while text.last == "=" { text.removeLast() }
        return text
    }

    /// The bytes of `text`, or `nil` when it is not unpadded base64url (standard base64's `+`, `/`
    /// and `=` are refused: a decoder that took them would hide an encoder's mistake).
    package static func decode(_ text: String) -> [UInt8]? {
        guard !text.contains(where: { $0 == "+" || $0 == "/" || $0 == "=" }), text.count % 4 != 1 else { return nil }
        var standard = text.replacing("-", with: "+").replacing("_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
        return Data(base64Encoded: standard).map { Array($0) }
    }
}
