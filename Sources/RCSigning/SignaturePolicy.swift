import RCCore

/// The rules a verified payload must also pass, with no I/O: TUF's lessons for a client. Expired is
/// refused (a freeze attack); a lower version than the last accepted one is refused (a rollback or a
/// replay), and so is another document under the same version.
public enum SignaturePolicy {
    /// Checks `payload` (whose document has digest `digest`) against the last accepted version.
    public static func check(
        _ payload: SignedPayload, digest: String, last: SignedVersionRecord?, now: Timestamp
    ) throws(SigningError) {
        guard payload.expires > now else {
            throw SigningError(
                .expired, "version \(payload.version) expired at \(payload.expires.iso8601) (now \(now.iso8601))")
        }
        guard let last else { return }
        if payload.version < last.version {
            throw SigningError(
                .rollback, "version \(payload.version) is lower than version \(last.version), accepted already")
        }
        if payload.version == last.version && digest != last.documentDigest {
            throw SigningError(
                .rollback, "version \(payload.version) was accepted already with another document")
        }
    }
}
