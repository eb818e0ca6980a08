import RCCore

/// The three Google APIs the firebase source talks to. `Endpoint=` replaces scheme, host and
/// port of all three; the paths stay as Google documents them (SPEC §6).
struct FirebaseEndpoints: Sendable {
    let installations: String
    let remoteConfig: String
    let realtime: String
    let project: String
    let apiKey: String

    init(config: AgentConfig) {
        project = config.projectId ?? ""
        apiKey = config.apiKey ?? ""
        func origin(_ host: String) -> String {
            config.endpoint.flatMap { URLText.origin(of: $0).map(String.init) } ?? "https://\(host)"
        }
        installations = origin("firebaseinstallations.googleapis.com")
        remoteConfig = origin("firebaseremoteconfig.googleapis.com")
        realtime = origin("firebaseremoteconfigrealtime.googleapis.com")
    }

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
struct DeviceFacts: Sendable {
    var languageCode = "en-US"
    var countryCode: String?
    var timeZone = "UTC"
    var platformVersion = "Linux"

    /// Reads the locale from LANG/LC_ALL, the zone from TZ or /etc/timezone or /etc/localtime, the
    /// kernel release from uname.
    static func current(environment: [String: String]) -> DeviceFacts {
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
