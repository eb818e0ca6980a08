import RCCore

/// An envelope that passed every check: its payload, the digest of its document, and which trusted
/// keys signed it.
public struct VerifiedDocument: Sendable {
    public let payload: SignedPayload
    public let documentDigest: String
    public let signers: [String]
}

/// Verifies an envelope as the agent does, in the order DSSE asks: the envelope is read, the
/// signatures are checked over the PAE of the payload bytes exactly as received, and only then is
/// the payload parsed and the version and expiry rules applied. One place for the daemon and for
/// `rcadmin verify`, so the operator sees what a device would say.
public enum SignedDocumentCheck {
    /// - Parameters:
    ///   - threshold: how many distinct trusted keys must have signed.
    ///   - last: the last accepted version (`nil` on a device that never accepted one).
    public static func verify(
        _ bytes: [UInt8], keys: TrustedKeys, threshold: Int, last: SignedVersionRecord?, now: Timestamp,
        payloadLimit: Int
    ) throws(SigningError) -> VerifiedDocument {
        let envelope = try DSSEEnvelope.parse(bytes, payloadLimit: payloadLimit)
        guard envelope.payloadType == DSSEEnvelope.configPayloadType else {
            throw SigningError(
                .signature,
                "envelope: payloadType \(JSONValue.string(envelope.payloadType).compactText) is not "
                    + "\(DSSEEnvelope.configPayloadType)")
        }
        let signers = signers(of: envelope, keys: keys)
        guard signers.count >= threshold else {
            throw SigningError(
                .signature,
                "\(signers.count) of the \(threshold) trusted key(s) required signed it "
                    + "(\(envelope.signatures.count) signature(s), \(keys.keys.count) key(s) trusted in \(keys.path))")
        }
        let payload = try SignedPayload.parse(envelope.payload)
        let digest = try DocumentDigest.of(Array(payload.document.compactText.utf8))
        try SignaturePolicy.check(payload, digest: digest, last: last, now: now)
        return VerifiedDocument(payload: payload, documentDigest: digest, signers: signers)
    }

    /// The key ids of the distinct trusted keys with a valid signature. Each signature is tried first
    /// against the key its `keyid` names (a hint, and nothing more), then against the keys not yet
    /// counted; a key counts once however many signatures it made.
    static func signers(of envelope: DSSEEnvelope, keys: TrustedKeys) -> [String] {
        let message = envelope.pae
        var verified: [String] = []
        for signature in envelope.signatures where signature.bytes.count == 64 {
            let candidates = keys.keys.filter { !verified.contains($0.keyID) }
            let ordered =
                candidates.filter { $0.keyID == signature.keyID } + candidates.filter { $0.keyID != signature.keyID }
            if let key = ordered.first(where: { $0.verifies(signature.bytes, of: message) }) {
                verified.append(key.keyID)
            }
        }
        return verified
    }
}
