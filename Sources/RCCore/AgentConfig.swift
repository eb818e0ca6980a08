/// When fetched values become active.
public enum ActivationPolicy: String, Sendable, CaseIterable {
    case immediate
    case onStart = "on-start"
    case manual
}

public enum SourceType: String, Sendable, CaseIterable {
    case file, http, firebase
}

public enum VersionScheme: String, Sendable, CaseIterable {
    case dotted, debian
}

public enum RealtimeMode: String, Sendable, CaseIterable {
    case auto, yes, no
}

/// The agent's configuration: `/etc/rcagent/agent.conf` and its drop-ins, applied over the
/// built-in defaults. Every property's default here is the one `etc/rcagent/agent.conf` documents.
public struct AgentConfig: Sendable {
    // [Agent]
    public var stateDirectory = "/var/lib/rcagent"
    public var socket = "/run/rcagent/agent.sock"
    public var socketGroup: String? = "rcagent"
    public var defaults = "/etc/rcagent/defaults.json"
    public var minimumFetchInterval: Duration = .seconds(12 * 3600)
    public var fetchTimeout: Duration = .seconds(60)
    public var activation = ActivationPolicy.immediate
    public var hooksDirectory = "/etc/rcagent/hooks.d"
    public var hookTimeout: Duration = .seconds(30)
    // [App]
    public var appVersion: String?
    public var appPackage: String?
    public var versionScheme = VersionScheme.dotted
    public var requiredUpdateKey = "linux_required_update"
    public var recommendedUpdateKey = "linux_recommended_update"
    // [Source]
    public var sourceType = SourceType.file
    public var sourcePath: String?
    public var sourceURL: String?
    public var headers: [String] = []
    public var caFile: String?
    public var clientCertificate: String?
    public var clientKey: String?
    public var projectId: String?
    public var appId: String?
    public var apiKey: String?
    public var endpoint: String?
    /// http/firebase: larger responses are refused.
    public var maxResponseSize = 4 << 20
    /// file/http: the Ed25519 public keys (a PEM file or a directory of them) whose DSSE envelopes are
    /// accepted; set, plain documents are refused.
    public var trustedKeys: String?
    /// How many distinct trusted keys must have signed a document.
    public var signatureThreshold = 1
    // [Push]
    public var realtime = RealtimeMode.auto
    /// `[Push] MQTT=`: one broker, or several of one cluster (failover, tried in turn).
    public var mqttBrokers: [String] = []
    /// The first push broker (`rcadmin relay` publishes there), `nil` without one.
    public var mqtt: String? { mqttBrokers.first }
    public var mqttTopic = "PUSH_RC"
    public var mqttUsername: String?
    public var mqttPasswordFile: String?
    public var mqttCAFile: String?
    /// `mqtts://` only: the device's own certificate and key, for brokers that identify devices so.
    public var mqttClientCertificate: String?
    public var mqttClientKey: String?
    public var jitter: Duration = .seconds(3)
    // [Report]
    /// `<topic>/<deviceId>` carries the agent's report; `nil`: no reports.
    public var reportTopic: String?
    /// `nil`: the push brokers (and then the push channel's connection).
    public var reportBrokerList: [String]?
    public var reportUsername: String?
    public var reportPasswordFile: String?
    public var reportCAFile: String?
    public var reportClientCertificate: String?
    public var reportClientKey: String?
    /// The Prometheus text file the daemon keeps current (`MetricsFile=`); `nil`: none.
    public var metricsFile: String?
    // [Relay] (rcadmin relay)
    public var relayFCMTopic: String?
    // [Activation]
    public var activationSettings = ActivationSettings()
    // [Signals]
    public var signals: [(name: String, value: String)] = []

    /// The files that were read, in the order they were applied.
    public var files: [String] = []
    /// What the files set, as written: `Section.Key` → value (a repeated key's values joined by
    /// newlines). A key set back to empty is the built-in default again and is left out. Two
    /// configs are told apart by this (a reload, the digest `status` reports), not by the parsed
    /// properties: comparing those took a key path per setting, a sixth of `rcagent get`'s start.
    public var assignments: [String: String] = [:]
    /// Where each key was last set, for cross-key errors (`Section.Key` → location).
    public var locations: [String: SourceLocation] = [:]
    /// Keys the agent does not know: reported, not fatal, so a newer config works on an older agent.
    public var warnings: [ConfigError] = []

    public init() {}

    public static let defaultPath = "/etc/rcagent/agent.conf"

    public var databasePath: String { stateDirectory + "/state.db" }

    /// The last accepted signed version: a file of its own beside the database, so that a database
    /// moved aside as corrupt (and rebuilt from the defaults) does not forget it.
    public var signedVersionPath: String { stateDirectory + "/signed-version.json" }

    /// Applies one file's assignments over the current values.
    /// Every bad value is reported at once (a syntax error ends the file: what follows it cannot be
    /// read reliably).
    public mutating func apply(text: String, file: String) throws(ConfigError) {
        files.append(file)
        var problems: [ConfigError] = []
        for entry in try ConfigFile.parse(text, file: file) {
            do { try apply(entry) } catch { problems.append(error) }
        }
        if let error = ConfigError.combining(problems) { throw error }
    }

    /// Applies one file's assignments for a command that only reads: each bad line is skipped (a
    /// bad value leaves its key at the built-in default) and returned, never thrown.
    public mutating func applySkippingBadLines(text: String, file: String) -> [ConfigError] {
        files.append(file)
        var (entries, problems) = ConfigFile.parseSkippingBadLines(text, file: file)
        for entry in entries {
            do { try apply(entry) } catch {
                problems.append(error)
                // Back to the built-in default: an empty value resets every key.
                try? ConfigKeys.setting(entry.section, entry.key)?.apply(&self, "", entry.location)
            }
        }
        return problems
    }

    mutating func apply(_ entry: ConfigEntry) throws(ConfigError) {
        if entry.section == "Signals" {
            // Firebase's limits, counted in UTF-16 units as the Android SDK counts them (it refuses
            // a set that breaks one, and the server would too): refused here, with the line.
            let keyLength = entry.key.utf16.count
            guard keyLength <= Self.maximumSignalKeyLength else {
                throw ConfigError(
                    entry.location,
                    "custom signal name is \(keyLength) characters long; Firebase allows at most \(Self.maximumSignalKeyLength)"
                )
            }
            let valueLength = entry.value.utf16.count
            guard valueLength <= Self.maximumSignalValueLength else {
                throw ConfigError(
                    entry.location,
                    "custom signal '\(entry.key)' has a value \(valueLength) characters long; Firebase allows at most \(Self.maximumSignalValueLength)"
                )
            }
            signals.removeAll { $0.name == entry.key }
            locations["Signals.\(entry.key)"] = entry.value.isEmpty ? nil : entry.location
            if !entry.value.isEmpty { signals.append((entry.key, entry.value)) }
            return
        }
        guard let setting = ConfigKeys.setting(entry.section, entry.key) else {
            let known = ConfigKeys.all.contains { $0.section == entry.section } || entry.section == "Signals"
            warnings.append(
                ConfigError(
                    entry.location,
                    known
                        ? "unknown key '\(entry.key)' in [\(entry.section)], ignoring"
                            + Self.didYouMean(
                                entry.key, among: ConfigKeys.all.filter { $0.section == entry.section }.map(\.key))
                        : "unknown section [\(entry.section)], ignoring '\(entry.key)='"
                            + Self.didYouMean(entry.section, among: Self.sections, brackets: true)))
            return
        }
        try setting.apply(&self, entry.value, entry.location)
        // An alias (`[Push] TrustedKeys=`) is recorded under the key it spells: the later line wins.
        let name = "\(setting.section).\(setting.key)"
        locations[name] = entry.location
        if entry.value.isEmpty {
            assignments[name] = nil
        } else if let earlier = assignments[name], Self.repeatable.contains(name) {
            assignments[name] = earlier + "\n" + entry.value
        } else {
            assignments[name] = entry.value
        }
    }

    /// Firebase's limits on custom signals (the Android SDK's `CustomSignals` checks, the server's own).
    public static let maximumSignalKeyLength = 250
    public static let maximumSignalValueLength = 500
    public static let maximumSignalCount = 100

    /// Checks the number of custom signals once every file has been applied (a drop-in may remove
    /// some): more than Firebase takes is an error at the first signal past the limit.
    public func validateSignals() throws(ConfigError) {
        guard signals.count > Self.maximumSignalCount else { return }
        let first = signals[Self.maximumSignalCount].name
        throw ConfigError(
            locations["Signals.\(first)"] ?? SourceLocation(file: files.last ?? "config", line: 0),
            "[Signals] sets \(signals.count) custom signals; Firebase allows at most \(Self.maximumSignalCount)")
    }

    // MARK: - Report

    /// The brokers the report goes to: `[Report] MQTT=`, else the push brokers.
    public var reportBrokers: [String] { reportBrokerList ?? mqttBrokers }

    /// Whether the report rides on the push channel's connection (one connection per device): it
    /// goes to the very brokers the push channel uses, whatever `[Report]`'s credentials say.
    public var reportSharesPushConnection: Bool { reportTopic != nil && reportBrokers == mqttBrokers }

    /// A report topic needs a broker to go to: checked once every file has been applied (a drop-in
    /// may set either).
    public func validateReport() throws(ConfigError) {
        guard reportTopic != nil, reportBrokers.isEmpty else { return }
        throw ConfigError(
            locations["Report.MQTTStatusTopic"] ?? SourceLocation(file: files.last ?? "config", line: 0),
            "[Report] MQTTStatusTopic= needs a broker: set [Report] MQTT= or [Push] MQTT=")
    }

    /// A client certificate goes with its key, and only over TLS: either alone, or with `mqtt://`
    /// brokers, would be silently unused, and the broker would refuse the device for a reason
    /// nobody sees in the config.
    /// Signed documents are the file and http sources' (Firebase signs nothing of the kind).
    public func validateTrustedKeys() throws(ConfigError) {
        guard trustedKeys != nil, sourceType == .firebase else { return }
        throw ConfigError(
            locations["Source.TrustedKeys"] ?? SourceLocation(file: files.last ?? "config", line: 0),
            "TrustedKeys= applies to the file and http sources, not Type=firebase")
    }

    /// Every `Window=` zone is one the system's zone database has (`exists`: RCSystem's check).
    public func validateWindowZones(exists: (String) -> Bool) throws(ConfigError) {
        for window in activationSettings.windows.windows {
            guard let zone = window.zone, !exists(zone) else { continue }
            throw ConfigError(
                locations["Activation.Window"] ?? SourceLocation(file: files.last ?? "config", line: 0),
                "Window= '\(TextEscaping.terminal(window.text))' '\(zone)' is not a time zone in the system's zone database (e.g. Europe/Berlin)"
            )
        }
    }

    public func validateClientCertificates() throws(ConfigError) {
        for section in ["Push", "Report"] {
            let certificate = section == "Push" ? mqttClientCertificate : reportClientCertificate
            let key = section == "Push" ? mqttClientKey : reportClientKey
            let brokers = section == "Push" ? mqttBrokers : reportBrokers
            func location(_ name: String) -> SourceLocation {
                locations["\(section).\(name)"] ?? SourceLocation(file: files.last ?? "config", line: 0)
            }
            if (certificate == nil) != (key == nil) {
                let given = certificate == nil ? "MQTTClientKey" : "MQTTClientCertificate"
                let missing = certificate == nil ? "MQTTClientCertificate" : "MQTTClientKey"
                throw ConfigError(location(given), "[\(section)] \(given)= needs \(missing)= too")
            }
            if certificate != nil, let plain = brokers.first(where: { MQTTAddress.parse($0)?.tls == false }) {
                throw ConfigError(
                    location("MQTTClientCertificate"),
                    "[\(section)] MQTTClientCertificate= needs mqtts:// brokers, got '\(plain)'")
            }
        }
    }

    /// Keys that add a value each time they are set (an empty value clears them).
    static let repeatable: Set<String> = ["Source.Header", "Activation.Window"]

    /// The settings whose values differ from `old`'s, as `Section.Key` (a signal as
    /// `Signals.<name>`), in the order agent.conf documents them: what a reload has to apply.
    public func changedSettings(since old: AgentConfig) -> [String] {
        var changed = ConfigKeys.all.map { "\($0.section).\($0.key)" }.filter { assignments[$0] != old.assignments[$0] }
        let before = Dictionary(old.signals.map { ($0.name, $0.value) }) { $1 }
        let after = Dictionary(signals.map { ($0.name, $0.value) }) { $1 }
        for name in Set(before.keys).union(after.keys).sorted() where before[name] != after[name] {
            changed.append("Signals.\(name)")
        }
        return changed
    }

    /// A short fingerprint of every setting: the daemon reports the one it runs with, so `doctor`
    /// can tell when the files on disk say something else (a reload is due).
    public var digest: String {
        let text =
            assignments.sorted { $0.key < $1.key }.flatMap { [$0.key, $0.value] }
            + signals.sorted { $0.name < $1.name }.flatMap { [$0.name, $0.value] }
        return String(FNV1a.hash(text.joined(separator: "\u{0}").utf8), radix: 16)
    }

    /// The sections agent.conf knows.
    static let sections = ["Agent", "App", "Source", "Push", "Activation", "Report", "Signals", "Relay"]

    /// " (did you mean 'URL'?)" for a name that differs from a known one only in case, or by up to
    /// two edits (a typo); else nothing.
    static func didYouMean(_ name: String, among known: [String], brackets: Bool = false) -> String {
        let lower = Array(name.lowercased().unicodeScalars)
        let best = known.map { candidate -> (String, Int) in
            (candidate, editDistance(lower, Array(candidate.lowercased().unicodeScalars)))
        }.min { $0.1 < $1.1 }
        guard let (candidate, distance) = best, distance <= min(2, lower.count / 3) else { return "" }
        return brackets ? " (did you mean [\(candidate)]?)" : " (did you mean '\(candidate)'?)"
    }

    /// Levenshtein distance; both names are short (config keys), so the quadratic table is tiny.
    private static func editDistance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
        guard a.count <= 64, b.count <= 64 else { return Int.max }
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1] + [Int](repeating: 0, count: b.count)
            for (j, y) in b.enumerated() {
                current[j + 1] = Swift.min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }

    /// Checks what only the daemon needs: the source has what its type requires. The error also
    /// carries the unknown keys the files hold, as a `Url=` for `URL=` is often its cause.
    public func validateSource() throws(ConfigError) {
        do { try checkSource() } catch {
            var error = error
            error.others += warnings
            throw error
        }
    }

    private func checkSource() throws(ConfigError) {
        func location(_ key: String) -> SourceLocation {
            locations["Source.\(key)"] ?? locations["Source.Type"]
                ?? SourceLocation(file: files.last ?? "config", line: 0)
        }
        switch sourceType {
        case .file:
            break  // without Path= the daemon runs unconfigured: it serves the cache and refuses fetches
        case .http:
            guard let url = sourceURL else { throw ConfigError(location("URL"), "[Source] Type=http needs URL=") }
            guard URLText.origin(of: url) != nil else {
                throw ConfigError(location("URL"), "URL= must start with http:// or https://, got '\(url)'")
            }
        case .firebase:
            for (key, value) in [("ProjectId", projectId), ("AppId", appId), ("APIKey", apiKey)] where value == nil {
                throw ConfigError(location(key), "[Source] Type=firebase needs \(key)=")
            }
        }
    }
}
