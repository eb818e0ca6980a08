import Glibc
import RCCore
import RCSystem

/// The three Google APIs a Firebase client talks to (installations, Remote Config fetch, realtime),
/// for one project and API key. An `endpoint` (the daemon's `Endpoint=`, a test server) replaces
/// scheme, host and port of all three; the paths stay as Google documents them.
public struct FirebaseEndpoints: Sendable {
    /// The origins (`https://host[:port]`) of Firebase Installations, Remote Config and its realtime API.
    public let installations: String
    public let remoteConfig: String
    public let realtime: String
    /// The project id (`projects/{project}` in every path) and the app's API key.
    public let project: String
    public let apiKey: String

    /// `endpoint`: a URL whose origin replaces Google's hosts (its path is ignored), or `nil`.
    public init(project: String, apiKey: String, endpoint: String? = nil) {
        self.project = project
        self.apiKey = apiKey
        func origin(_ host: String) -> String {
            endpoint.flatMap { URLText.origin(of: $0).map(String.init) } ?? "https://\(host)"
        }
        installations = origin("firebaseinstallations.googleapis.com")
        remoteConfig = origin("firebaseremoteconfig.googleapis.com")
        realtime = origin("firebaseremoteconfigrealtime.googleapis.com")
    }

    // The calls' URLs. The two Remote Config calls carry the API key in the query as well as in
    // their X-Goog-Api-Key header; the installation calls only in the header.
    var createInstallation: String { "\(installations)/v1/projects/\(project)/installations" }

    func generateToken(fid: String) -> String {
        "\(installations)/v1/projects/\(project)/installations/\(fid)/authTokens:generate"
    }

    var fetch: String { "\(remoteConfig)/v1/projects/\(project)/namespaces/firebase:fetch?key=\(apiKey)" }

    var streamInvalidations: String {
        "\(realtime)/v1/projects/\(project)/namespaces/firebase:streamFetchInvalidations?key=\(apiKey)"
    }
}

/// What the fetch request says about the device (the Firebase client fields).
public struct DeviceFacts: Sendable {
    public var languageCode = "en-US"
    public var countryCode: String?
    public var timeZone = "UTC"
    public var platformVersion = "Linux"

    public init() {}

    /// Reads the locale from LANG/LC_ALL, the zone from TZ or /etc/timezone or /etc/localtime, the
    /// kernel release from uname.
    public static func current(environment: [String: String]) -> DeviceFacts {
        var facts = DeviceFacts()
        let locale = environment["LC_ALL"].flatMap { $0.isEmpty ? nil : $0 } ?? environment["LANG"] ?? ""
        let tag = locale.split(separator: ".").first.map(String.init) ?? ""
        if tag != "C", tag != "POSIX", !tag.isEmpty {
            let parts = tag.split(separator: "_")
            facts.languageCode = parts.joined(separator: "-")
            if parts.count > 1 { facts.countryCode = String(parts[1]) }
        }
        if let zone = environment["TZ"], !zone.isEmpty {
            facts.timeZone = zone.hasPrefix(":") ? String(zone.dropFirst()) : zone
        } else if let bytes = try? FileBytes.read("/etc/timezone"),
            let zone = String(decoding: bytes, as: UTF8.self).split(separator: "\n").first, !zone.isEmpty
        {
            facts.timeZone = String(zone)
        }
        facts.platformVersion = "Linux " + Uname.release
        return facts
    }
}

/// The kernel release (`uname -r`).
enum Uname {
    static var release: String {
        var info = utsname()
        guard uname(&info) == 0 else { return "unknown" }
        return withUnsafeBytes(of: info.release) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }
}
