/// Why a signed document, a key or a signing request was refused. `kind` is the word a refused
/// fetch names (status, logs, the report): `signature`, `rollback`, `expired`; `key` is a trusted
/// or signing key that cannot be used.
public struct SigningError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Kind: String, Sendable {
        /// Not a well-formed envelope of the expected type, or too few trusted keys signed it.
        case signature
        /// A lower version than the last one accepted, or another document under the same version.
        case rollback
        /// The payload's `expires` has passed.
        case expired
        /// A key file that cannot be read, is not an Ed25519 key, or can be written by another user.
        case key
    }

    public let kind: Kind
    public let reason: String

    public init(_ kind: Kind, _ reason: String) {
        self.kind = kind
        self.reason = reason
    }

    public var description: String { "\(kind.rawValue): \(reason)" }
}
