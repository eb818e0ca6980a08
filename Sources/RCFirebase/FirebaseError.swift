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

extension FetchFailure {
    /// Whether `response` says no retry with the same configuration can succeed: 403 (the project
    /// refuses this key or app), 400 for an API key Google does not know (`API_KEY_INVALID`), or
    /// 404 with Google's own `NOT_FOUND` error (Firebase Installations or the realtime API do not
    /// know the project or app: only a config change helps; the Android SDK's request limiter goes
    /// silent for 24 h after such an answer). Any other 400, a 5xx, a 404 without Google's error
    /// body (a proxy's page) may pass: those are retried.
    static func isPermanent(_ response: HTTPResponse) -> Bool {
        if response.status == 403 { return true }
        guard response.status == 400 || response.status == 404,
            let error = (try? JSONValue.parse(response.body))?["error"]
        else { return false }
        if response.status == 404 { return error["status"]?.stringValue == "NOT_FOUND" }
        if error["message"]?.stringValue?.hasPrefix("API key not valid") == true { return true }
        guard case let .array(details)? = error["details"] else { return false }
        return details.contains { $0["reason"]?.stringValue == "API_KEY_INVALID" }
    }
}
