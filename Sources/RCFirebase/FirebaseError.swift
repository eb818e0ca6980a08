import RCCore
import RCHTTP

/// A failed Firebase call (installations, fetch, realtime): what kind of failure, so a caller can
/// decide how to back off, and why, for people.
public struct FirebaseError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable, Equatable {
        /// No answer, or a server error: try again later (connection refused, DNS, timeout, 5xx).
        case unavailable
        /// The server answered with something that is not what the protocol promises.
        case badDocument
        /// The server asked for a pause (429, 503), with its `Retry-After` if it sent one.
        case throttled(retryAfter: Duration?)
        /// Anything else: refused credentials, a missing project, a failed local write.
        case other
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }

    /// "`call`: HTTP 403: <the API's error message>", the message escaped and cut short.
    static func describe(_ response: HTTPResponse, call: String) -> String {
        let message = (try? JSONValue.parse(response.body))?["error"]?["message"]?.stringValue
        return "\(call): HTTP \(response.status)" + (message.map { ": \(TextEscaping.snippet($0))" } ?? "")
    }
}
