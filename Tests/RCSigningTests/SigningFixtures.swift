import RCCore
import RCSigning

/// Keys and envelopes made in-process for the unit suites.
enum SigningFixtures {
    static let document = JSONValue.object([
        ("entries", .object([("banner", .string("hello"))])), ("state", .string("UPDATE")),
        ("templateVersion", .string("7")),
    ])

    static let later = Timestamp.now() + .seconds(86_400)

    static func payload(version: Int64 = 7, expires: Timestamp = later, document: JSONValue = document) -> [UInt8] {
        SignedPayload(version: version, expires: expires, document: document).bytes
    }

    /// An envelope over `payload` signed by each of `keys`, with their key ids.
    static func envelope(
        _ payload: [UInt8], keys: [Ed25519PrivateKey], type: String = DSSEEnvelope.configPayloadType
    ) throws -> DSSEEnvelope {
        let pae = DSSEEnvelope.pae(type: type, body: payload)
        var signatures: [DSSEEnvelope.Signature] = []
        for key in keys {
            signatures.append(.init(keyID: try key.publicKey().keyID, bytes: try key.sign(pae)))
        }
        return DSSEEnvelope(payloadType: type, payload: payload, signatures: signatures)
    }

    static func bytes(_ envelope: DSSEEnvelope) -> [UInt8] { Array(envelope.json.compactText.utf8) }

    static func trusted(_ keys: [Ed25519PrivateKey]) throws -> TrustedKeys {
        TrustedKeys(keys: try keys.map { try $0.publicKey() }, path: "test keys")
    }
}
