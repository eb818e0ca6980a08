/// The config keys as data: section, name, and how a value is checked and stored.
/// An empty value resets a key to its built-in default (and clears a repeatable key).
struct ConfigKey: Sendable {
    let section: String
    let key: String
    let apply: @Sendable (inout AgentConfig, String, SourceLocation) throws(ConfigError) -> Void
    /// The value as the daemon reads it, in one spelling (a duration in milliseconds): two texts
    /// with the same value (`60s`, `1min`) are the same setting to a reload.
    var canonical: @Sendable (String) -> String = { $0 }
}

extension AgentConfig {
    /// The settings whose values differ from `old`'s, compared as the daemon reads them, not as
    /// written: `MinimumFetchInterval=60s` replaced by `1min` changes nothing.
    public func changedValues(since old: AgentConfig) -> [String] {
        changedSettings(since: old).filter { name in settingValue(name) != old.settingValue(name) }
    }

    /// The value of the setting `name` (`Section.Key`) as the daemon reads it, `nil` when unset:
    /// what a reload compares, and what names the services a setting feeds.
    public func settingValue(_ name: String) -> String? {
        if name.hasPrefix("Signals.") {
            let signal = name.dropFirst("Signals.".count)
            return signals.last { $0.name == signal }?.value
        }
        guard let text = assignments[name] else { return nil }
        guard let key = ConfigKeys.all.first(where: { "\($0.section).\($0.key)" == name }) else { return text }
        return key.canonical(text)
    }
}

enum ConfigKeys {
    /// Keys a second section also takes, with the same meaning: the signature keys belong to the
    /// source (they judge its documents) and are documented next to the push keys too.
    static let aliases: [(section: String, key: String, to: String)] = [
        ("Push", "TrustedKeys", "Source"), ("Push", "SignatureThreshold", "Source"),
    ]

    /// The setting `[section] key=` assigns, through ``aliases``; `nil` for an unknown key.
    /// (Compared part by part: this runs for every line of every config file a command reads.)
    static func setting(_ section: String, _ key: String) -> ConfigKey? {
        let section = aliases.first { $0.section == section && $0.key == key }?.to ?? section
        return all.first { $0.section == section && $0.key == key }
    }

    static let all: [ConfigKey] =
        [
            path("Agent", "StateDirectory", \.stateDirectory),
            path("Agent", "Socket", \.socket),
            // Empty means no group (only root and the daemon's user may change state).
            ConfigKey(section: "Agent", key: "SocketGroup") { config, value, _ in
                config.socketGroup = value.isEmpty ? nil : value
            },
            path("Agent", "Defaults", \.defaults),
            duration("Agent", "MinimumFetchInterval", \.minimumFetchInterval),
            duration("Agent", "FetchTimeout", \.fetchTimeout, allowZero: false),
            choice("Agent", "Activation", \.activation),
            path("Agent", "HooksDirectory", \.hooksDirectory),
            duration("Agent", "HookTimeout", \.hookTimeout, allowZero: false),

            optionalText("App", "Version", \.appVersion),
            optionalText("App", "Package", \.appPackage),
            choice("App", "VersionScheme", \.versionScheme),
            text("App", "RequiredUpdateKey", \.requiredUpdateKey),
            text("App", "RecommendedUpdateKey", \.recommendedUpdateKey),

            choice("Source", "Type", \.sourceType),
            optionalPath("Source", "Path", \.sourcePath),
            optionalText("Source", "URL", \.sourceURL),
            ConfigKey(section: "Source", key: "Header") { config, value, location throws(ConfigError) in
                guard !value.isEmpty else { return config.headers = [] }
                guard let colon = value.firstIndex(of: ":"), !value[..<colon].trimmingSpaces().isEmpty else {
                    throw ConfigError(location, "Header= must be 'Name: value', got '\(TextEscaping.terminal(value))'")
                }
                // Sent as it is written: a control byte (a CR would end the header and start another)
                // or a name HTTP does not allow is an error here, not a request that fails later.
                // RFC 9110 5.1: no whitespace between the name and the colon (servers answer 400).
                guard HeaderField.isValidName(value[..<colon]) else {
                    throw ConfigError(
                        location,
                        "Header= name '\(TextEscaping.terminal(String(value[..<colon])))' is not an HTTP token")
                }
                if let problem = HeaderField.problem(inValue: value[value.index(after: colon)...]) {
                    throw ConfigError(location, "Header= value cannot be sent: \(problem)")
                }
                config.headers.append(value)
            },
            optionalPath("Source", "CAFile", \.caFile),
            optionalPath("Source", "ClientCertificate", \.clientCertificate),
            optionalPath("Source", "ClientKey", \.clientKey),
            optionalText("Source", "ProjectId", \.projectId),
            optionalText("Source", "AppId", \.appId),
            ConfigKey(section: "Source", key: "APIKey") { config, value, location throws(ConfigError) in
                // Sent as the X-Goog-Api-Key header.
                if let problem = HeaderField.problem(inValue: value) {
                    throw ConfigError(location, "APIKey= cannot be sent: \(problem)")
                }
                config.apiKey = value.isEmpty ? builtIn.apiKey : value
            },
            ConfigKey(section: "Source", key: "Endpoint") { config, value, location throws(ConfigError) in
                guard !value.isEmpty else { return config.endpoint = nil }
                guard URLText.origin(of: value) != nil else {
                    throw ConfigError(location, "Endpoint= must be an http:// or https:// URL, got '\(value)'")
                }
                config.endpoint = value
            },
            ConfigKey(section: "Source", key: "MaxResponseSize") { config, value, location throws(ConfigError) in
                guard !value.isEmpty else { return config.maxResponseSize = builtIn.maxResponseSize }
                guard let size = SizeText.parse(value) else {
                    throw ConfigError(location, "MaxResponseSize= '\(value)' is not a size (e.g. 4M, 512K, 65536)")
                }
                config.maxResponseSize = size
            },
            optionalPath("Source", "TrustedKeys", \.trustedKeys),
            ConfigKey(section: "Source", key: "SignatureThreshold") { config, value, location throws(ConfigError) in
                guard !value.isEmpty else { return config.signatureThreshold = builtIn.signatureThreshold }
                guard let count = Int(value), (1...32).contains(count) else {
                    throw ConfigError(
                        location, "SignatureThreshold= must be a number of keys from 1 to 32, got '\(value)'")
                }
                config.signatureThreshold = count
            },

            choice("Push", "Realtime", \.realtime),
            ConfigKey(section: "Push", key: "MQTT") { config, value, location throws(ConfigError) in
                config.mqttBrokers = try brokers(value, key: "MQTT", location)
            },
            text("Push", "MQTTTopic", \.mqttTopic),
            optionalText("Push", "MQTTUsername", \.mqttUsername),
            optionalPath("Push", "MQTTPasswordFile", \.mqttPasswordFile),
            optionalPath("Push", "MQTTCAFile", \.mqttCAFile),
            optionalPath("Push", "MQTTClientCertificate", \.mqttClientCertificate),
            optionalPath("Push", "MQTTClientKey", \.mqttClientKey),
            duration("Push", "Jitter", \.jitter),

            ConfigKey(section: "Report", key: "MQTTStatusTopic") { config, value, location throws(ConfigError) in
                guard !value.isEmpty else { return config.reportTopic = nil }
                if let problem = ReportTopic.problem(value) {
                    throw ConfigError(location, "MQTTStatusTopic= \(problem), got '\(value)'")
                }
                config.reportTopic = value
            },
            ConfigKey(section: "Report", key: "MQTT") { config, value, location throws(ConfigError) in
                config.reportBrokerList = value.isEmpty ? nil : try brokers(value, key: "MQTT", location)
            },
            optionalText("Report", "MQTTUsername", \.reportUsername),
            optionalPath("Report", "MQTTPasswordFile", \.reportPasswordFile),
            optionalPath("Report", "MQTTCAFile", \.reportCAFile),
            optionalPath("Report", "MQTTClientCertificate", \.reportClientCertificate),
            optionalPath("Report", "MQTTClientKey", \.reportClientKey),
            ConfigKey(section: "Report", key: "MetricsFile") { config, value, location throws(ConfigError) in
                guard !value.isEmpty else { return config.metricsFile = nil }
                if let problem = metricsFileProblem(value) {
                    throw ConfigError(location, "MetricsFile= \(problem), got '\(value)'")
                }
                config.metricsFile = value
            },

            // `rcadmin relay` only: the daemon does not read it.
            ConfigKey(section: "Relay", key: "FCMTopic") { config, value, location throws(ConfigError) in
                guard !value.isEmpty else { return config.relayFCMTopic = nil }
                guard FCMTopic.isValid(value) else {
                    throw ConfigError(location, "FCMTopic= must be a topic name of [A-Za-z0-9-_.~%], got '\(value)'")
                }
                config.relayFCMTopic = value
            },
        ] + ActivationSettings.configKeys

    private static let builtIn = AgentConfig()

    /// A broker list: space-separated `mqtt://` or `mqtts://` URLs (a cluster's nodes), each
    /// checked; empty for an empty value.
    private static func brokers(_ value: String, key: String, _ location: SourceLocation) throws(ConfigError)
        -> [String]
    {
        let urls = value.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard urls.count <= maximumBrokers else {
            throw ConfigError(location, "\(key)= lists \(urls.count) brokers; at most \(maximumBrokers) are taken")
        }
        var schemes: Set<Bool> = []
        for url in urls {
            guard let address = MQTTAddress.parse(url) else {
                throw ConfigError(
                    location, "\(key)= must be an mqtt://host[:port] or mqtts://host[:port] URL, got '\(url)'")
            }
            schemes.insert(address.tls)
        }
        // One client makes every connection of a list, and TLS is set up per client.
        guard schemes.count <= 1 else {
            throw ConfigError(location, "\(key)= mixes mqtt:// and mqtts:// URLs; a list is all one or all the other")
        }
        return urls
    }

    /// More brokers than any cluster has is a mistake, and the list is walked on every reconnect.
    static let maximumBrokers = 32

    private static func text(
        _ section: String, _ key: String, _ property: WritableKeyPath<AgentConfig, String> & Sendable
    )
        -> ConfigKey
    {
        ConfigKey(section: section, key: key) { config, value, _ in
            config[keyPath: property] = value.isEmpty ? builtIn[keyPath: property] : value
        }
    }

    /// Why `path` cannot be the metrics file: it must be an absolute path naming a file (the
    /// daemon writes a temporary file beside it and renames it over) whose name ends in `.prom`,
    /// the only files node_exporter's textfile collector reads; so it can never name the state
    /// database, the reader file or anything else the daemon keeps (a reload that unsets it
    /// removes the file).
    static func metricsFileProblem(_ path: String) -> String? {
        guard path.hasPrefix("/") else { return "must be an absolute path" }
        let name = path.split(separator: "/", omittingEmptySubsequences: false).last ?? ""
        guard !name.isEmpty, name != ".", name != ".." else { return "must name a file, not a directory" }
        guard name.utf8.count > 5, name.utf8.suffix(5).elementsEqual(".prom".utf8) else {
            return "must name a file ending in .prom (node_exporter reads only those)"
        }
        return nil
    }

    private static func optionalText(
        _ section: String, _ key: String, _ property: WritableKeyPath<AgentConfig, String?> & Sendable
    ) -> ConfigKey {
        ConfigKey(section: section, key: key) { config, value, _ in
            config[keyPath: property] = value.isEmpty ? builtIn[keyPath: property] : value
        }
    }

    private static func path(
        _ section: String, _ key: String, _ property: WritableKeyPath<AgentConfig, String> & Sendable
    )
        -> ConfigKey
    {
        ConfigKey(section: section, key: key) { config, value, location throws(ConfigError) in
            guard value.isEmpty || value.hasPrefix("/") else {
                throw ConfigError(location, "\(key)= must be an absolute path, got '\(value)'")
            }
            config[keyPath: property] = value.isEmpty ? builtIn[keyPath: property] : value
        }
    }

    private static func optionalPath(
        _ section: String, _ key: String, _ property: WritableKeyPath<AgentConfig, String?> & Sendable
    ) -> ConfigKey {
        ConfigKey(section: section, key: key) { config, value, location throws(ConfigError) in
            guard value.isEmpty || value.hasPrefix("/") else {
                throw ConfigError(location, "\(key)= must be an absolute path, got '\(value)'")
            }
            config[keyPath: property] = value.isEmpty ? nil : value
        }
    }

    private static func duration(
        _ section: String, _ key: String, _ property: WritableKeyPath<AgentConfig, Duration> & Sendable,
        allowZero: Bool = true
    ) -> ConfigKey {
        var setting = ConfigKey(section: section, key: key) { config, value, location throws(ConfigError) in
            guard !value.isEmpty else { return config[keyPath: property] = builtIn[keyPath: property] }
            guard let duration = DurationText.parse(value) else {
                throw ConfigError(location, "\(key)= '\(value)' is not a duration (e.g. 500ms, 30s, 5min, 12h, 1d)")
            }
            guard allowZero || duration > .zero else { throw ConfigError(location, "\(key)= must be greater than 0") }
            config[keyPath: property] = duration
        }
        setting.canonical = { text in DurationText.parse(text).map { "\($0.milliseconds)ms" } ?? text }
        return setting
    }

    private static func choice<T: RawRepresentable<String> & CaseIterable & Sendable>(
        _ section: String, _ key: String, _ property: WritableKeyPath<AgentConfig, T> & Sendable
    ) -> ConfigKey {
        ConfigKey(section: section, key: key) { config, value, location throws(ConfigError) in
            guard !value.isEmpty else { return config[keyPath: property] = builtIn[keyPath: property] }
            guard let choice = T(rawValue: value) else {
                let allowed = T.allCases.map(\.rawValue).joined(separator: ", ")
                throw ConfigError(location, "\(key)= '\(value)' is not one of: \(allowed)")
            }
            config[keyPath: property] = choice
        }
    }
}
