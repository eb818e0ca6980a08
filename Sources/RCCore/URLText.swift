/// The little URL handling the sources need, on plain strings (no Foundation URL parsing).
public enum URLText {
    /// `scheme://host[:port]` of an http or https URL, or `nil` when `url` is not one.
    public static func origin(of url: String) -> Substring? {
        guard url.hasPrefix("http://") || url.hasPrefix("https://") else { return nil }
        let afterScheme = url.index(url.firstIndex(of: ":")!, offsetBy: 3)
        let end = url[afterScheme...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? url.endIndex
        guard end > afterScheme else { return nil }
        return url[..<end]
    }

    /// `scheme://host:port` of an http or https URL, lower-cased, the port made explicit and user
    /// info dropped: what must be equal for two URLs to be the same origin (where request headers
    /// may go on a redirect). `nil` for anything but http and https.
    public static func comparableOrigin(of url: String) -> String? {
        guard let origin = origin(of: url) else { return nil }
        let text = origin.lowercased()
        let scheme = text.hasPrefix("https://") ? "https" : "http"
        var authority = text.dropFirst(scheme.count + 3)
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        var host = authority
        var port = scheme == "https" ? "443" : "80"
        // The port is after the last colon, unless that colon is inside an IPv6 literal (`[::1]`).
        if let colon = authority.lastIndex(of: ":"), !authority[colon...].contains("]") {
            host = authority[..<colon]
            let given = authority[authority.index(after: colon)...]
            if !given.isEmpty { port = String(given) }
        }
        return "\(scheme)://\(host):\(port)"
    }

    /// `url` with its scheme, host and port taken from `endpoint` (`Endpoint=`: proxies, tests).
    public static func replacingOrigin(of url: String, with endpoint: String) -> String {
        guard let found = Self.origin(of: url), let replacement = Self.origin(of: endpoint) else { return url }
        return String(replacement) + url[found.endIndex...]
    }
}
