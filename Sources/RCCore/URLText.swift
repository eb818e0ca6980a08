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

    /// `url` with its scheme, host and port taken from `endpoint` (SPEC §6 `Endpoint=`: proxies, tests).
    public static func replacingOrigin(of url: String, with endpoint: String) -> String {
        guard let found = Self.origin(of: url), let replacement = Self.origin(of: endpoint) else { return url }
        return String(replacement) + url[found.endIndex...]
    }
}
