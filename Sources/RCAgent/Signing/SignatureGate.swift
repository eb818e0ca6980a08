import RCCore
import RCService
import RCSigning
import RCTemplate
import Synchronization

/// The daemon's signed-document gate (`TrustedKeys=`): every document the file and http sources
/// fetch goes through it before it is read. It accepts only a DSSE envelope that enough distinct
/// trusted keys signed, whose payload has not expired and is not older than the last one accepted
/// (``SignedDocumentCheck``), and records each accepted version in the state directory once its
/// document was read. Anything else is a failed fetch whose error names why; the last good
/// snapshot keeps serving.
///
/// Keys are read when the config is (start and reload). Keys that cannot be used (a file another
/// user can write, no Ed25519 key, fewer keys than `SignatureThreshold=`) refuse every document:
/// a device told to trust only signed config never falls back to unsigned.
final class SignatureGate: DocumentOpener {
    private let keys: Result<TrustedKeys, SigningError>
    private let threshold: Int
    private let recordPath: String
    private let payloadLimit: Int
    private let log: Logger
    /// The last accepted version as read from, and last written to, ``recordPath``.
    private let last: Mutex<Result<SignedVersionRecord?, DocumentError>>

    init(config: AgentConfig, keysPath: String, log: Logger) {
        threshold = config.signatureThreshold
        recordPath = config.signedVersionPath
        // The largest document either source hands over.
        payloadLimit = max(config.maxResponseSize, 16 << 20)
        self.log = log
        var keys: Result<TrustedKeys, SigningError>
        do { keys = .success(try TrustedKeys.load(keysPath)) } catch { keys = .failure(error) }
        if case let .success(trusted) = keys, trusted.keys.count < threshold {
            keys = .failure(
                SigningError(
                    .key,
                    "SignatureThreshold=\(threshold) but \(keysPath) holds \(trusted.keys.count) distinct key(s)"))
        }
        switch keys {
        case let .success(trusted):
            log.info(
                "Trusting \(trusted.keys.count) key(s) from \(keysPath) for signed documents, threshold \(threshold)")
        case let .failure(error):
            log.error("Failed to read TrustedKeys=: \(error.reason); every fetched document is refused")
        }
        self.keys = keys
        last = Mutex(Self.load(config.signedVersionPath))
    }

    private static func load(_ path: String) -> Result<SignedVersionRecord?, DocumentError> {
        do { return .success(try SignedVersionRecord.load(path)) } catch { return .failure(error) }
    }

    var contextTag: String {
        let keyTag =
            switch keys {
            case let .success(trusted): trusted.tag
            case .failure: "unusable"
            }
        // Once the accepted document has expired, the tag changes: the next fetch reads the document
        // whole (no 304, no same-bytes shortcut) and so says whether the server still serves it.
        let expired = last.withLock { state in
            if case let .success(record?) = state { record.expires <= .now() } else { false }
        }
        return "signed:\(keyTag):\(threshold)" + (expired ? ":expired" : "")
    }

    func open(_ bytes: [UInt8], name: String) throws(DocumentError) -> OpenedDocument {
        let trusted: TrustedKeys
        switch keys {
        case let .success(keys): trusted = keys
        case let .failure(error):
            throw DocumentError(document: name, reason: "signature: no usable trusted keys (\(error.reason))")
        }
        let record = try lastAccepted(name: name)
        let verified: VerifiedDocument
        do {
            verified = try SignedDocumentCheck.verify(
                bytes, keys: trusted, threshold: threshold, last: record, now: .now(), payloadLimit: payloadLimit)
        } catch {
            throw DocumentError(document: name, reason: error.description)
        }
        let payload = verified.payload
        let accepted = SignedVersionRecord(
            version: payload.version, documentDigest: verified.documentDigest, expires: payload.expires,
            acceptedAt: .now(), keyIDs: verified.signers)
        return OpenedDocument(document: payload.document) { [self] () throws(DocumentError) in
            try remember(accepted, previous: record, signers: verified.signers)
        }
    }

    /// Records an accepted version (once its document was read). The same document again with the
    /// same expiry changes nothing on disk.
    private func remember(_ accepted: SignedVersionRecord, previous: SignedVersionRecord?, signers: [String])
        throws(DocumentError)
    {
        if let previous, previous.version == accepted.version, previous.documentDigest == accepted.documentDigest,
            previous.expires == accepted.expires, previous.keyIDs == accepted.keyIDs
        {
            return
        }
        try accepted.save(recordPath)
        last.withLock { $0 = .success(accepted) }
        log.info(
            "Accepted signed version \(accepted.version), expiring \(accepted.expires.iso8601), signed by "
                + signers.map { String($0.prefix(16)) }.joined(separator: ", "))
    }

    /// The last accepted version; a record that cannot be read is read again on every fetch (it
    /// may have been repaired), and refuses every document until then.
    private func lastAccepted(name: String) throws(DocumentError) -> SignedVersionRecord? {
        let state = last.withLock { state in
            if case .failure = state { state = Self.load(recordPath) }
            return state
        }
        switch state {
        case let .success(record): return record
        case let .failure(error):
            throw DocumentError(
                document: name,
                reason: "signature: cannot read the last accepted version (\(error)); remove the file only if "
                    + "this device may accept any version again")
        }
    }
}
