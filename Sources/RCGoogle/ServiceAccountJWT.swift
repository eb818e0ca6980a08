import RCCore
import RCSystem

/// The OAuth 2.0 scopes the operator tool asks for; a token may carry several.
public enum GoogleScope {
    /// Read and publish Remote Config templates.
    public static let remoteConfig = "https://www.googleapis.com/auth/firebase.remoteconfig"
    /// Send FCM messages.
    public static let messaging = "https://www.googleapis.com/auth/firebase.messaging"
}

extension ServiceAccount {
    /// How long a signed assertion is valid: Google accepts at most an hour.
    static let assertionLifetime: Duration = .seconds(3600)

    /// The signed JWT a token request carries (Google's server-to-server OAuth flow): header
    /// `{"alg":"RS256","typ":"JWT","kid":private_key_id}`, claims `iss` (the account), `scope`
    /// (space-separated), `aud` (the token URI), `iat` and `exp` (an hour later), each part base64url
    /// without padding, signed RS256 with the account's key.
    public func signedJWT(scopes: [String], issuedAt now: Timestamp = .now()) throws(GoogleError) -> String {
        let issued = now.milliseconds / 1_000
        let header = JSONValue.object([
            ("alg", .string("RS256")), ("typ", .string("JWT")), ("kid", .string(privateKeyId)),
        ])
        let claims = JSONValue.object([
            ("iss", .string(clientEmail)), ("scope", .string(scopes.joined(separator: " "))),
            ("aud", .string(tokenURI)), ("iat", .integer(issued)),
            ("exp", .integer(issued + Self.assertionLifetime.components.seconds)),
        ])
        let signingInput = Base64URL.encode(header.compactText.utf8) + "." + Base64URL.encode(claims.compactText.utf8)
        let call = "signing a token request for \(clientEmail)"
        let key = try RSASigningKey(pem: privateKey, call: call)
        let signature = try key.sign(Array(signingInput.utf8), call: call)
        return signingInput + "." + Base64URL.encode(signature)
    }
}
