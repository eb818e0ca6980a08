import RCCore
import RCSigning
import Testing

/// The whole check the agent and `rcadmin verify` run: signatures over the PAE, the threshold of
/// distinct trusted keys, then the payload and the version and expiry rules.
@Suite struct SignedDocumentCheckTests {
    static func verify(
        _ envelope: DSSEEnvelope, trusting keys: [Ed25519PrivateKey], threshold: Int = 1,
        last: SignedVersionRecord? = nil, now: Timestamp = .now()
    ) throws -> VerifiedDocument {
        try SignedDocumentCheck.verify(
            SigningFixtures.bytes(envelope), keys: try SigningFixtures.trusted(keys), threshold: threshold, last: last,
            now: now, payloadLimit: 1 << 20)
    }

    static func refusal(
        _ envelope: DSSEEnvelope, trusting keys: [Ed25519PrivateKey], threshold: Int = 1,
        last: SignedVersionRecord? = nil
    ) throws -> SigningError? {
        do {
            _ = try verify(envelope, trusting: keys, threshold: threshold, last: last)
            return nil
        } catch let error as SigningError { return error }
    }

    @Test func aDocumentSignedByATrustedKeyIsAccepted() throws {
        let key = try Ed25519PrivateKey()
        let verified = try Self.verify(
            try SigningFixtures.envelope(SigningFixtures.payload(), keys: [key]), trusting: [key])
        #expect(verified.payload.version == 7)
        #expect(verified.payload.document == SigningFixtures.document)
        #expect(verified.signers == [try key.publicKey().keyID])
        #expect(verified.documentDigest.utf8.count == 64)
    }

    @Test func anUntrustedKeyOrATamperedPayloadIsASignatureRefusal() throws {
        let key = try Ed25519PrivateKey()
        let other = try Ed25519PrivateKey()
        let envelope = try SigningFixtures.envelope(SigningFixtures.payload(), keys: [other])
        #expect(try Self.refusal(envelope, trusting: [key])?.kind == .signature)
        var tampered = try SigningFixtures.envelope(SigningFixtures.payload(), keys: [key])
        tampered.payload = SigningFixtures.payload(version: 8)
        let error = try Self.refusal(tampered, trusting: [key])
        #expect(error?.description.hasPrefix("signature: 0 of the 1 trusted key(s) required signed it") == true)
    }

    @Test func theKeyIdIsOnlyAHint() throws {
        let key = try Ed25519PrivateKey()
        var envelope = try SigningFixtures.envelope(SigningFixtures.payload(), keys: [key])
        envelope.signatures[0].keyID = "whatever the signer calls it"
        #expect(try Self.verify(envelope, trusting: [key]).signers.count == 1)
        envelope.signatures[0].keyID = ""
        #expect(try Self.verify(envelope, trusting: [key]).signers.count == 1)
    }

    @Test func theThresholdCountsDistinctKeys() throws {
        let first = try Ed25519PrivateKey()
        let second = try Ed25519PrivateKey()
        let both = try SigningFixtures.envelope(SigningFixtures.payload(), keys: [first, second])
        #expect(try Self.verify(both, trusting: [first, second], threshold: 2).signers.count == 2)
        // The same key twice (under two key ids) is one key.
        var twice = try SigningFixtures.envelope(SigningFixtures.payload(), keys: [first, first])
        twice.signatures[1].keyID = "copy"
        let error = try Self.refusal(twice, trusting: [first, second], threshold: 2)
        #expect(error?.description.hasPrefix("signature: 1 of the 2 trusted key(s) required") == true)
        // A signature from a key that is not trusted does not count either.
        #expect(try Self.refusal(both, trusting: [first], threshold: 2) != nil)
    }

    @Test func anotherPayloadTypeIsRefused() throws {
        let key = try Ed25519PrivateKey()
        let envelope = try SigningFixtures.envelope(
            SigningFixtures.payload(), keys: [key], type: "application/vnd.in-toto+json")
        #expect(try Self.refusal(envelope, trusting: [key])?.description.contains("payloadType") == true)
    }

    @Test func anExpiredPayloadIsRefused() throws {
        let key = try Ed25519PrivateKey()
        let payload = SigningFixtures.payload(expires: .now() + .seconds(-60))
        let error = try Self.refusal(try SigningFixtures.envelope(payload, keys: [key]), trusting: [key])
        #expect(error?.kind == .expired)
        #expect(error?.description.hasPrefix("expired: version 7 expired at ") == true)
    }

    @Test func aLowerVersionOrAnotherDocumentUnderTheSameVersionIsARollback() throws {
        let key = try Ed25519PrivateKey()
        let accepted = try Self.verify(
            try SigningFixtures.envelope(SigningFixtures.payload(), keys: [key]), trusting: [key])
        let last = SignedVersionRecord(
            version: 7, documentDigest: accepted.documentDigest, expires: SigningFixtures.later, acceptedAt: .now())
        let older = try SigningFixtures.envelope(SigningFixtures.payload(version: 6), keys: [key])
        #expect(
            try Self.refusal(older, trusting: [key], last: last)?.description
                == "rollback: version 6 is lower than version 7, accepted already")
        let other = try SigningFixtures.envelope(SigningFixtures.payload(document: .object([])), keys: [key])
        #expect(
            try Self.refusal(other, trusting: [key], last: last)?.description
                == "rollback: version 7 was accepted already with another document")
        // The same document again (re-signed with a later expiry) and any newer version pass.
        let again = try SigningFixtures.envelope(
            SigningFixtures.payload(expires: SigningFixtures.later + .seconds(60)), keys: [key])
        #expect(try Self.refusal(again, trusting: [key], last: last) == nil)
        let newer = try SigningFixtures.envelope(
            SigningFixtures.payload(version: 8, document: .object([])), keys: [key])
        #expect(try Self.refusal(newer, trusting: [key], last: last) == nil)
    }

    @Test func signaturesAreCheckedBeforeThePayloadIsRead() throws {
        // An unsigned payload that is not even JSON is a signature refusal, not a JSON error.
        let key = try Ed25519PrivateKey()
        let envelope = DSSEEnvelope(
            payload: Array("{not json".utf8), signatures: [.init(keyID: "", bytes: Array(repeating: 0, count: 64))])
        #expect(try Self.refusal(envelope, trusting: [key])?.description.contains("0 of the 1") == true)
    }
}
