import RCCore

/// Where requests that carry credentials (a signed assertion, a bearer token) may go: https, or
/// plain http to this machine only (a test server on loopback). A bearer token sent in clear
/// across a network is a token given away.
enum GoogleEndpoint {
    /// Why `url` may not receive credentials, or `nil` when it may.
    static func refusal(_ url: String) -> String? {
        guard let origin = URLText.comparableOrigin(of: url) else {
            return "is not an http or https URL: \(TextEscaping.snippet(url))"
        }
        if origin.hasPrefix("https://") { return nil }
        let loopback = ["127.0.0.1", "localhost", "[::1]"]
        if loopback.contains(where: { origin.hasPrefix("http://\($0):") }) { return nil }
        return "is plain http to another machine, which would carry credentials in clear: use https "
            + "(plain http only to 127.0.0.1, localhost or [::1]): \(TextEscaping.snippet(url))"
    }

    /// `scheme://host[:port]` of an endpoint override, or `defaultOrigin` without one.
    static func origin(_ override: String?, default defaultOrigin: String) -> String {
        override.flatMap { URLText.origin(of: $0).map(String.init) } ?? defaultOrigin
    }
}
