import RCCore

/// The platforms `set-update` writes update keys for; the key is `<platform>_<kind>_update`
/// (`linux_required_update`, the name the device agent reads by default, and the iOS and Android
/// keys of the mobile update libraries).
public enum UpdatePlatform: String, Sendable, CaseIterable {
    case linux, ios, android

    /// The Remote Config key for `kind` on this platform.
    public func key(for kind: UpdateKind) -> String { "\(rawValue)_\(kind.rawValue)_update" }

    /// Refuses a version the platform's update check could not read or would read differently.
    /// A version the device cannot parse is worse than no update: the check reports "cannot tell"
    /// (Linux) or silently "no update" (the mobile libraries drop what they cannot parse).
    ///
    /// - linux: exactly what `rcagent check-update` accepts, with the parser it uses, in the
    ///   scheme the fleet's agents are configured with (`[App] VersionScheme=`, dotted by default).
    /// - ios: `CFBundleVersion` style `X.Y.Z` or `X.Y.Z.B`, decimal only: the iOS library compares
    ///   the app's CFBundleVersion as 3 or 4 integers and silently drops segments that are not
    ///   numbers, so `1.2.beta.3` would be published as one version and read as another. Each part
    ///   must fit the library's `Int`.
    /// - android: `versionName` style, 1 to 5 dot-separated decimal parts, each within Kotlin's
    ///   `Int` (the library's `toIntOrNull` drops a part that overflows, shifting the rest left).
    public func validateVersion(_ text: String, linuxScheme: VersionScheme = .dotted) throws(TemplateError) {
        guard !text.isEmpty else { throw TemplateError.invalid("version", text, "is empty") }
        guard !text.unicodeScalars.contains(where: { $0.properties.isWhitespace || TextEscaping.needsEscaping($0) })
        else {
            throw TemplateError.invalid("version", text, "must not contain spaces or control characters")
        }
        switch self {
        case .linux:
            do { _ = try AppVersion(text, scheme: linuxScheme, origin: "version") } catch {
                throw TemplateError.invalid(
                    "version", text,
                    "\(TextEscaping.terminal(error.reason)) (the \(linuxScheme.rawValue) scheme rcagent check-update uses)"
                )
            }
        case .ios:
            let version: DottedVersion
            do { version = try DottedVersion(text, origin: "version") } catch {
                throw TemplateError.invalid(
                    "version", text, "\(TextEscaping.terminal(error.reason)) (iOS CFBundleVersion style)")
            }
            if let part = version.parts.firstIndex(where: { $0 > UInt64(Int64.max) }) {
                throw TemplateError.invalid("version", text, "part \(part + 1) is too large for the iOS update check")
            }
        case .android:
            let parts = text.split(separator: ".", omittingEmptySubsequences: false)
            guard (1...5).contains(parts.count) else {
                throw TemplateError.invalid(
                    "version", text, "expected 1 to 5 dot-separated numbers (Android versionName), found \(parts.count)"
                )
            }
            for (index, part) in parts.enumerated() {
                guard !part.isEmpty, part.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
                    throw TemplateError.invalid(
                        "version", text, "part \(index + 1) is not a decimal number (Android versionName)")
                }
                guard Int32(part) != nil else {
                    throw TemplateError.invalid("version", text, "part \(index + 1) is too large for Android's Int")
                }
            }
        }
    }
}
