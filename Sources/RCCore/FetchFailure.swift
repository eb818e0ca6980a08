/// A failed fetch or call to a config server: what kind of failure, so the caller can decide how
/// to back off (and `status` can say it), and why, for people. One type for the daemon's sources
/// (`SourceError`) and the Firebase protocol module (`FirebaseError`), so nothing maps one to the
/// other.
public struct FetchFailure: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable, Equatable {
        /// No answer, or a server error: try again later (file missing, connection refused, DNS,
        /// timeout, 5xx).
        case unavailable
        /// The answer is not what the protocol promises (not a config document).
        case badDocument
        /// The server asked for a pause (429, 503), with its `Retry-After` if it sent one.
        case throttled(retryAfter: Duration?)
        /// Anything else: refused credentials, a missing project, a failed local write.
        case other
    }

    public let kind: Kind
    public let message: String
    /// The server refused in a way no retry with the same configuration changes: an API key it
    /// does not know, a project that refuses this client (403). A long-running caller stops on it.
    public let permanent: Bool

    public init(_ kind: Kind, _ message: String, permanent: Bool = false) {
        self.kind = kind
        self.message = message
        self.permanent = permanent
    }

    public var description: String { message }

    /// Whether an HTTP `status` throttles: the server asking for a pause (429 Too Many Requests,
    /// 503 Service Unavailable), to be honoured with its `Retry-After`. The one set for every
    /// source and every Firebase call, so `status` and the throttle mean the same everywhere.
    public static func throttles(status: Int) -> Bool { status == 429 || status == 503 }
}
