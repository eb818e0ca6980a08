import RCCore

/// What a signed envelope carries: `{"version": N, "expires": ISO8601, "document": <document>}`.
/// `version` orders documents (never lower than the last accepted one); `expires` bounds how long a
/// server can keep serving it (a freeze attack); `document` is a fetch response or a template.
public struct SignedPayload: Sendable, Equatable {
    /// The largest version: integers beyond 2^53 do not survive every JSON tool a pipeline uses.
    public static let maximumVersion: Int64 = 9_007_199_254_740_991

    public var version: Int64
    public var expires: Timestamp
    public var document: JSONValue

    public init(version: Int64, expires: Timestamp, document: JSONValue) {
        self.version = version
        self.expires = expires
        self.document = document
    }

    /// Reads a payload: the bytes exactly as signed, only after a signature verified them (or in
    /// `rcadmin verify`, to say what it holds).
    public static func parse(_ bytes: [UInt8]) throws(SigningError) -> SignedPayload {
        let json: JSONValue
        do { json = try JSONValue.parse(bytes) } catch { throw SigningError(.signature, "payload: \(error)") }
        guard case .object = json else {
            throw SigningError(.signature, "payload: a \(json.typeName), not an object")
        }
        let version: Int64
        switch json["version"] {
        case let .integer(value)? where (1...maximumVersion).contains(value):
            version = value
        case let .integer(value)?:
            throw SigningError(.signature, "payload: \"version\" \(value) is not between 1 and \(maximumVersion)")
        case .double?:
            // The reader gives a double for a fraction, an exponent or an integer too large for 64
            // bits: "1.0", "1e3" and "-0.0" all name a version in a form a signer never writes.
            throw SigningError(
                .signature, "payload: \"version\" must be an integer written without a fraction or exponent")
        case nil:
            throw SigningError(.signature, "payload: no \"version\"")
        case let other?:
            throw SigningError(.signature, "payload: \"version\" must be an integer, not a \(other.typeName)")
        }
        guard case let .string(expiresText)? = json["expires"] else {
            throw SigningError(.signature, "payload: \"expires\" must be an ISO 8601 time string")
        }
        guard let expires = Timestamp(iso8601: expiresText) else {
            throw SigningError(
                .signature,
                "payload: \"expires\" \(JSONValue.string(expiresText).compactText) is not an ISO 8601 time "
                    + "(YYYY-MM-DDTHH:MM:SSZ)")
        }
        guard let document = json["document"], case .object = document else {
            throw SigningError(.signature, "payload: \"document\" must be an object (a fetch response or a template)")
        }
        return SignedPayload(version: version, expires: expires, document: document)
    }

    /// The payload's bytes, as `rcadmin sign` signs them.
    public var bytes: [UInt8] {
        let json = JSONValue.object([
            ("version", .integer(version)), ("expires", .string(expires.iso8601)), ("document", document),
        ])
        return Array(json.compactText.utf8)
    }
}
