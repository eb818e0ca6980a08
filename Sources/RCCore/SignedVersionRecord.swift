/// The last signed document a device accepted (`TrustedKeys=`): its version, the digest of its
/// document, when it expires and when it was accepted. Kept in a file of its own in the state
/// directory (``AgentConfig/signedVersionPath``; RCSystem reads and writes it), written atomically, so it survives restarts and a
/// corrupt database moved aside: a recovered device must not accept an older document.
/// RCCore's, not the verifier's: `rcagent status` and `doctor` read it without libcrypto.
public struct SignedVersionRecord: Sendable, Equatable {
    public var version: Int64
    /// SHA-256 (hex) of the document's canonical JSON text.
    public var documentDigest: String
    public var expires: Timestamp
    public var acceptedAt: Timestamp
    /// The key ids (SHA-256 of the raw key, hex) of the trusted keys whose signatures were valid:
    /// `status` names them without reading the keys. Empty in records written before they were kept.
    public var keyIDs: [String]

    /// Most key ids a record keeps (as many as keys are trusted at once).
    public static let maximumKeyIDs = 32

    public init(
        version: Int64, documentDigest: String, expires: Timestamp, acceptedAt: Timestamp, keyIDs: [String] = []
    ) {
        self.version = version
        self.documentDigest = documentDigest
        self.expires = expires
        self.acceptedAt = acceptedAt
        self.keyIDs = Array(keyIDs.prefix(Self.maximumKeyIDs))
    }

    public var json: JSONValue {
        .object([
            ("version", .integer(version)), ("documentDigest", .string(documentDigest)),
            ("expires", .string(expires.iso8601)), ("acceptedAt", .string(acceptedAt.iso8601)),
            ("keyIds", .array(keyIDs.map(JSONValue.string))),
        ])
    }

    /// Reads the file's text; `nil` with why when it is not a record.
    public static func parse(_ bytes: [UInt8]) -> Result<SignedVersionRecord, DocumentError> {
        func fail(_ reason: String) -> Result<SignedVersionRecord, DocumentError> {
            .failure(DocumentError(document: "signed-version.json", reason: reason))
        }
        guard let json = try? JSONValue.parse(bytes) else { return fail("not JSON") }
        guard case let .integer(version)? = json["version"], version >= 1,
            case let .string(digest)? = json["documentDigest"], digest.utf8.count == 64,
            case let .string(expiresText)? = json["expires"], let expires = Timestamp(iso8601: expiresText),
            case let .string(acceptedText)? = json["acceptedAt"], let accepted = Timestamp(iso8601: acceptedText)
        else { return fail("not a signed-version record") }
        var keyIDs: [String] = []
        if case let .array(ids)? = json["keyIds"] {
            // A key id is 64 hex digits; anything else is not one (never printed as it stands).
            keyIDs = ids.prefix(maximumKeyIDs).compactMap { id in
                guard case let .string(text) = id, text.utf8.count == 64,
                    text.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
                else { return nil }
                return text
            }
        }
        return .success(
            SignedVersionRecord(
                version: version, documentDigest: digest, expires: expires, acceptedAt: accepted, keyIDs: keyIDs))
    }

    /// Whether it expires within `window` of `now` (status and doctor warn).
    public func expiresSoon(now: Timestamp, window: Duration = .seconds(24 * 3_600)) -> Bool {
        expires - now <= window
    }
}
