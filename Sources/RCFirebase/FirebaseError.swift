import RCCore
import RCHTTP

/// A failed Firebase call (installations, fetch, realtime): the same failure kinds as the daemon's
/// sources, so a caller hands it on as it is.
public typealias FirebaseError = FetchFailure

extension FetchFailure {
    /// "`call`: HTTP 403: <the API's error message>", the message escaped and cut short.
    static func describe(_ response: HTTPResponse, call: String) -> String {
        let message = (try? JSONValue.parse(response.body))?["error"]?["message"]?.stringValue
        return "\(call): HTTP \(response.status)" + (message.map { ": \(TextEscaping.snippet($0))" } ?? "")
    }
}
