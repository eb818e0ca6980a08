import RCCore

/// A DSSE envelope (secure-systems-lab/dsse, envelope.md): a payload, its type, and signatures over
/// the pre-authentication encoding (PAE) of both. Read with the one JSON reader (bounded nesting,
/// duplicate member names refused); unknown members are ignored, as DSSE asks.
///
/// `keyid` is an unauthenticated hint: it orders which key is tried first and nothing else.
public struct DSSEEnvelope: Sendable, Equatable {
    /// The payload type of rcagent's signed documents.
    public static let configPayloadType = "application/vnd.rcagent.config+json"
    /// Most signatures read from one envelope: each may cost one verification per trusted key.
    public static let maximumSignatures = 16

    /// One signature: the key hint (empty when absent) and the signature bytes.
    public struct Signature: Sendable, Equatable {
        public var keyID: String
        public var bytes: [UInt8]

        public init(keyID: String, bytes: [UInt8]) {
            self.keyID = keyID
            self.bytes = bytes
        }
    }

    public var payloadType: String
    public var payload: [UInt8]
    public var signatures: [Signature]

    public init(payloadType: String = configPayloadType, payload: [UInt8], signatures: [Signature]) {
        self.payloadType = payloadType
        self.payload = payload
        self.signatures = signatures
    }

    /// Reads an envelope. `payloadLimit` bounds the decoded payload, checked before decoding it.
    public static func parse(_ bytes: [UInt8], payloadLimit: Int) throws(SigningError) -> DSSEEnvelope {
        let json: JSONValue
        do { json = try JSONValue.parse(bytes) } catch {
            throw SigningError(.signature, "not a DSSE envelope: \(error)")
        }
        guard case .object = json else {
            throw SigningError(.signature, "not a DSSE envelope: the document is a \(json.typeName), not an object")
        }
        guard json["payload"] != nil || json["signatures"] != nil else {
            throw SigningError(
                .signature,
                "not a DSSE envelope (no \"payload\" or \"signatures\"): a plain document is refused "
                    + "while TrustedKeys= is set")
        }
        guard case let .string(type)? = json["payloadType"] else {
            throw SigningError(.signature, "envelope: \"payloadType\" must be a string")
        }
        guard case let .string(payloadText)? = json["payload"] else {
            throw SigningError(.signature, "envelope: \"payload\" must be a base64 string")
        }
        guard DSSEBase64.decodedLengthBound(payloadText) - 3 <= payloadLimit else {
            throw SigningError(.signature, "envelope: \"payload\" is larger than \(payloadLimit) bytes")
        }
        let payload: [UInt8]
        switch DSSEBase64.decode(payloadText) {
        case let .success(decoded): payload = decoded
        case let .failure(problem): throw SigningError(.signature, "envelope: \"payload\" \(problem)")
        }
        // The length check above is on whole groups of four; the last, short one may add two bytes.
        guard payload.count <= payloadLimit else {
            throw SigningError(.signature, "envelope: \"payload\" is larger than \(payloadLimit) bytes")
        }
        guard case let .array(items)? = json["signatures"] else {
            throw SigningError(.signature, "envelope: \"signatures\" must be an array")
        }
        guard items.count <= maximumSignatures else {
            throw SigningError(
                .signature, "envelope: \"signatures\" lists \(items.count); at most \(maximumSignatures) are read")
        }
        var signatures: [Signature] = []
        var seen: [String: Int] = [:]
        for (index, item) in items.enumerated() {
            let place = "envelope: signatures[\(index)]"
            guard case .object = item else { throw SigningError(.signature, "\(place) must be an object") }
            guard case let .string(sigText)? = item["sig"] else {
                throw SigningError(.signature, "\(place).sig must be a base64 string")
            }
            let keyID: String
            switch item["keyid"] {
            case nil, .null?: keyID = ""
            case let .string(text)?: keyID = text
            case let other?: throw SigningError(.signature, "\(place).keyid must be a string, not a \(other.typeName)")
            }
            if !keyID.isEmpty {
                if let first = seen[keyID] {
                    throw SigningError(
                        .signature,
                        "\(place).keyid \(JSONValue.string(keyID).compactText) is also signatures[\(first)]'s")
                }
                seen[keyID] = index
            }
            // An Ed25519 signature is 64 bytes: anything far longer is refused before decoding.
            guard sigText.utf8.count <= 1_024 else {
                throw SigningError(
                    .signature, "\(place).sig is \(sigText.utf8.count) characters, no signature's length")
            }
            switch DSSEBase64.decode(sigText) {
            case let .success(decoded): signatures.append(Signature(keyID: keyID, bytes: decoded))
            case let .failure(problem): throw SigningError(.signature, "\(place).sig \(problem)")
            }
        }
        guard !signatures.isEmpty else { throw SigningError(.signature, "envelope: \"signatures\" is empty") }
        return DSSEEnvelope(payloadType: type, payload: payload, signatures: signatures)
    }

    /// DSSE's pre-authentication encoding: `"DSSEv1" SP LEN(type) SP type SP LEN(body) SP body`, each
    /// LEN the byte count in ASCII decimal. What every signature signs.
    public static func pae(type: String, body: [UInt8]) -> [UInt8] {
        let typeBytes = Array(type.utf8)
        var out = Array("DSSEv1 \(typeBytes.count) ".utf8)
        out += typeBytes
        out += Array(" \(body.count) ".utf8)
        out += body
        return out
    }

    /// The bytes this envelope's signatures sign.
    public var pae: [UInt8] { Self.pae(type: payloadType, body: payload) }

    /// The envelope as DSSE writes it (standard base64 with padding).
    public var json: JSONValue {
        .object([
            ("payload", .string(DSSEBase64.encode(payload))),
            ("payloadType", .string(payloadType)),
            (
                "signatures",
                .array(
                    signatures.map {
                        .object([("keyid", .string($0.keyID)), ("sig", .string(DSSEBase64.encode($0.bytes)))])
                    })
            ),
        ])
    }
}
