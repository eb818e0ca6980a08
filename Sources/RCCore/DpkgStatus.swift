/// Reads an installed package's version straight from dpkg's status database (no subprocess); the
/// file itself is read by RCSystem's `installedVersion(of:statusFile:)`.
public enum DpkgStatus {
    public static let defaultPath = "/var/lib/dpkg/status"

    /// The version of `package` in the text of a dpkg status file.
    public static func installedVersion(of package: String, statusText bytes: [UInt8]) throws(UpdateCheckError)
        -> String
    {
        var found = false
        for stanza in String(decoding: bytes, as: UTF8.self).split(separator: "\n\n") {
            var fields: [Substring: Substring] = [:]
            for line in stanza.split(separator: "\n") where !line.hasPrefix(" ") {
                guard let colon = line.firstIndex(of: ":") else { continue }
                fields[line[..<colon]] = line[line.index(after: colon)...].trimmingSpaces()
            }
            guard fields["Package"] == Substring(package) else { continue }
            found = true
            // "want flag status": only a fully installed package has a version that runs.
            if let status = fields["Status"], status.hasSuffix(" installed"), let version = fields["Version"] {
                return String(version)
            }
        }
        throw UpdateCheckError(
            found ? "package \(package) is not installed (dpkg status)" : "package \(package) is unknown to dpkg")
    }
}
