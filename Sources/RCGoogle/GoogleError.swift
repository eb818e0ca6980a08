import RCCore
import RCHTTP

/// A failed call to a Google API (the token exchange, Remote Config, FCM) or a refused input
/// (a key file, a message that fails the local checks): what was attempted, the HTTP status and
/// Google's own words when there was an answer. One type for the whole module, so the operator
/// tool reports any of them the same way, once.
public struct GoogleError: Error, CustomStringConvertible, Sendable {
    /// What was attempted: `GET https://…/remoteConfig`, `service account key /etc/key.json`.
    public let call: String
    /// The HTTP status of the answer; `nil` when there was none (transport failure, local check).
    public let status: Int?
    /// Google's `error.status` (`FAILED_PRECONDITION`, `INVALID_ARGUMENT`…) or the token endpoint's
    /// `error` (`invalid_grant`), when the answer carried one.
    public let googleStatus: String?
    /// FCM's `details[].errorCode` (`UNREGISTERED`, `QUOTA_EXCEEDED`…), when present.
    public let errorCode: String?
    /// Google's message (escaped, cut short) or the module's own reason.
    public let message: String

    public init(
        _ call: String, _ message: String, status: Int? = nil, googleStatus: String? = nil, errorCode: String? = nil
    ) {
        self.call = call
        self.message = message
        self.status = status
        self.googleStatus = googleStatus
        self.errorCode = errorCode
    }

    /// "`call`: HTTP 412 FAILED_PRECONDITION: <Google's message>", the parts there are.
    public var description: String {
        var text = call
        if let status { text += ": HTTP \(status)" }
        if let googleStatus { text += (status == nil ? ": " : " ") + googleStatus }
        if let errorCode, errorCode != googleStatus { text += " (\(errorCode))" }
        return message.isEmpty ? text : "\(text): \(message)"
    }

    /// An error answer of a Google API, read from its envelope: the REST APIs' `{"error": {"code",
    /// "message", "status", "details": [{"errorCode"}]}}` or OAuth's `{"error": "invalid_grant",
    /// "error_description": "…"}`. A body that is neither is quoted instead; every piece of it is
    /// escaped and cut short (it goes to a terminal or a log).
    package init(response: HTTPResponse, call: String, note: String? = nil) {
        self.init(status: response.status, body: response.body, call: call, note: note)
    }

    /// ``init(response:call:note:)`` from the answer's status and body.
    package init(status: Int, body: [UInt8], call: String, note: String? = nil) {
        let json = try? JSONValue.parse(body)
        let envelope = json?["error"]
        var googleStatus = envelope?["status"]?.stringValue
        var message = envelope?["message"]?.stringValue
        if let oauthError = envelope?.stringValue {
            googleStatus = oauthError
            message = json?["error_description"]?.stringValue ?? ""
        }
        var errorCode: String?
        if case let .array(details)? = envelope?["details"] {
            errorCode = details.lazy.compactMap { $0["errorCode"]?.stringValue }.first
        }
        var text = message.map { TextEscaping.snippet($0) } ?? TextEscaping.snippet(body)
        if let note { text += text.isEmpty ? note : " (\(note))" }
        self.init(
            call, text, status: status,
            googleStatus: googleStatus.map { TextEscaping.snippet($0, maxBytes: 64) },
            errorCode: errorCode.map { TextEscaping.snippet($0, maxBytes: 64) })
    }
}
