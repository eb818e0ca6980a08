import RCCore
import RCSystem

#if canImport(Glibc)
    import Glibc
#endif

/// What `status` and `doctor` say of signed documents (`TrustedKeys=`): the last accepted version
/// and its expiry, read from the state directory's record without libcrypto (the CLI never maps it;
/// the daemon verifies). `nil` from ``read(_:)`` when the device does not require signatures.
struct SignedDocumentStatus {
    let record: SignedVersionRecord?
    /// Why the record cannot be read (the daemon then refuses every document until it is repaired).
    let problem: String?

    static func read(_ config: AgentConfig) -> SignedDocumentStatus? {
        guard config.trustedKeys != nil else { return nil }
        do {
            return SignedDocumentStatus(record: try SignedVersionRecord.load(config.signedVersionPath), problem: nil)
        } catch {
            return SignedDocumentStatus(record: nil, problem: error.description)
        }
    }

    /// The status's `signature` member: `required` false (and the rest empty) without `TrustedKeys=`;
    /// `keyIds` are the trusted keys that signed the accepted document.
    static func json(_ config: AgentConfig) -> JSONValue {
        let status = read(config)
        let record = status?.record
        return .object([
            ("required", .bool(status != nil)),
            ("version", record.map { .integer($0.version) } ?? .null),
            ("expires", record.map { .string($0.expires.iso8601) } ?? .null),
            ("keyIds", .array((record?.keyIDs ?? []).map(JSONValue.string))),
            ("acceptedAt", record.map { .string($0.acceptedAt.iso8601) } ?? .null),
            ("problem", status?.problem.map(JSONValue.string) ?? .null),
        ])
    }

    /// `version 7, expires 2026-12-09T00:00:00Z (in 6d)`, with a warning when it has or soon will expire.
    func text(now: Timestamp) -> String {
        if let problem { return "unreadable: \(problem)" }
        guard let record else { return "required; none accepted yet" }
        let expiry = "expires \(record.expires.iso8601) (\(StatusCommand.age(now - record.expires)))"
        let warning =
            record.expires <= now
            ? "; EXPIRED: the server serves nothing newer (fetches are refused)"
            : record.expiresSoon(now: now) ? "; expires soon: sign and publish a new version" : ""
        return "version \(record.version), \(expiry)\(warning)"
    }

    /// The doctor's check: the keys are there and only root and the daemon's user can change them,
    /// and the accepted document is readable and not (about to be) expired.
    static func check(_ config: AgentConfig, now: Timestamp) -> DoctorCommand.Check? {
        guard let keys = config.trustedKeys, let status = read(config) else { return nil }
        if let problem = keysProblem(keys) {
            return DoctorCommand.Check(name: "signatures", ok: false, detail: "TrustedKeys=\(keys): \(problem)")
        }
        if let problem = status.problem {
            return DoctorCommand.Check(name: "signatures", ok: false, detail: problem)
        }
        let detail = "keys \(keys), threshold \(config.signatureThreshold); " + status.text(now: now)
        guard let record = status.record else {
            return DoctorCommand.Check(name: "signatures", ok: true, detail: detail)
        }
        if record.expires <= now { return DoctorCommand.Check(name: "signatures", ok: false, detail: detail) }
        return DoctorCommand.Check(
            name: "signatures", ok: true, detail: detail, warning: record.expiresSoon(now: now))
    }

    /// Why the key file or directory is unusable, checked as the daemon checks it (it parses the
    /// keys too; this looks for PEM blocks only).
    private static func keysProblem(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return String(cString: strerror(errno)) }
        if let who = FileWriters.others(info, trusting: [geteuid(), getuid()]) {
            return "\(who) can change the trusted keys"
        }
        guard info.st_mode & S_IFMT != S_IFDIR else { return nil }
        let text = (try? FileBytes.read(path, limit: 64 << 10)) ?? nil
        guard let text, text.contains(Array("-----BEGIN PUBLIC KEY-----".utf8)) else {
            return "no \"BEGIN PUBLIC KEY\" block"
        }
        return nil
    }
}

extension Array where Element == UInt8 {
    fileprivate func contains(_ part: [UInt8]) -> Bool {
        guard part.count <= count else { return false }
        return (0...(count - part.count)).contains { self[$0..<($0 + part.count)].elementsEqual(part) }
    }
}
