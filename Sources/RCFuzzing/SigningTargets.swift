import RCCore
import RCSigning
import RCSystem

/// Signed documents: the DSSE envelope as the agent verifies it (`TrustedKeys=`).
enum SigningTargets {
    static let all = [signedEnvelope]

    /// The key the corpus seeds are signed with (a test key, nothing trusts it anywhere else): with
    /// it, seeds reach the payload and the rules, not only the envelope's syntax.
    static let publicKeyPEM = """
        -----BEGIN PUBLIC KEY-----
        MCowBQYDK2VwAyEAG3/MH9ToJxKbUjUvECohOozZhk0AzLFG2t+t1t1qoE8=
        -----END PUBLIC KEY-----

        """
    /// Its private half, for tests that make new seeds.
    static let privateKeyPEM = """
        -----BEGIN PRIVATE KEY-----
        MC4CAQAwBQYDK2VwBCIEIJRJFpFS54bv6NvQHJ5xHPFTcQigRsdPrvajvyOXfVCv
        -----END PRIVATE KEY-----

        """

    private static let keys: TrustedKeys? = (try? Ed25519PublicKey(pem: Array(publicKeyPEM.utf8), name: "fuzz key"))
        .map { TrustedKeys(keys: [$0], path: "fuzz key") }
    /// A fixed "now", so that a seed's expiry means the same on every run.
    private static let now = Timestamp(iso8601: "2026-12-01T00:00:00Z")!
    /// Version 5 of one document accepted already: seeds exercise the rollback rule too.
    private static let last = SignedVersionRecord(
        version: 5, documentDigest: String(repeating: "0", count: 64), expires: now + .seconds(86_400), acceptedAt: now)

    static let signedEnvelope = FuzzTarget(
        "signed-envelope", checkSignedEnvelope,
        """
        DSSE envelope through SignedDocumentCheck: refusals name signature, rollback or expired; an accepted \
        envelope has a signature the key verifies over its PAE, re-encodes to the same envelope, and its \
        payload obeys the rules
        """)

    private static func checkSignedEnvelope(_ check: Checker, _ bytes: [UInt8]) throws(PropertyViolation)
        -> FuzzOutcome
    {
        guard let keys else {
            try check.require(false, "the fuzz key does not load (libcrypto missing?)")
            return .rejected
        }
        let verified: VerifiedDocument
        do {
            verified = try SignedDocumentCheck.verify(
                bytes, keys: keys, threshold: 1, last: last, now: now, payloadLimit: 1 << 20)
        } catch {
            try check.require(
                ["signature: ", "rollback: ", "expired: "].contains { error.description.hasPrefix($0) },
                "refusal \"\(error)\" names no reason")
            try check.require(error.reason.count > 0, "empty refusal")
            return .rejected
        }
        let envelope: DSSEEnvelope
        do { envelope = try DSSEEnvelope.parse(bytes, payloadLimit: 1 << 20) } catch {
            try check.require(false, "verified, but the envelope does not parse again: \(error)")
            return .rejected
        }
        try check.require(
            envelope.signatures.contains { keys.keys[0].verifies($0.bytes, of: envelope.pae) },
            "accepted without a signature the key verifies")
        try check.require(envelope.payloadType == DSSEEnvelope.configPayloadType, "payloadType \(envelope.payloadType)")
        let again = try? DSSEEnvelope.parse(Array(envelope.json.compactText.utf8), payloadLimit: 1 << 20)
        try check.require(again == envelope, "the envelope does not round-trip through its JSON")
        try check.require(
            (try? SignedPayload.parse(envelope.payload)) == verified.payload, "payload read twice differs")
        try check.require(verified.payload.expires > now, "accepted an expired payload")
        try check.require(verified.payload.version >= last.version, "accepted a rollback")
        return .accepted
    }
}
