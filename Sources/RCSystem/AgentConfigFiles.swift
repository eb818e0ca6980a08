import RCCore

/// Reading agent.conf and its drop-ins from disk; what they say is applied by ``AgentConfig/apply(text:file:)``.
extension AgentConfig {
    /// Loads the config file that `explicitPath` (from `--config`) or `RCAGENT_CONFIG` names, or the
    /// default path, then its drop-ins `<file>.d/*.conf` in lexical order. A missing default file
    /// means built-in defaults; a missing file the user named is an error.
    public static func load(
        explicitPath: String? = nil, environment: [String: String] = [:], defaultPath: String = defaultPath
    ) throws(ConfigError) -> AgentConfig {
        let named = explicitPath ?? environment["RCAGENT_CONFIG"].flatMap { $0.isEmpty ? nil : $0 }
        let path = named ?? defaultPath
        var config = AgentConfig()
        var problems: [ConfigError] = []
        func collect(_ body: () throws(ConfigError) -> Void) {
            do { try body() } catch { problems.append(error) }
        }
        if let text = try readIfPresent(path) {
            collect { () throws(ConfigError) in try config.apply(text: text, file: path) }
        } else if named != nil {
            throw ConfigError(SourceLocation(file: path, line: 0), "config file not found")
        }
        // Drop-ins apply even without the main file, as systemd's do.
        let dropInDirectory = path + ".d"
        for name in dropIns(in: dropInDirectory) {
            let dropIn = dropInDirectory + "/" + name
            collect { () throws(ConfigError) in
                if let text = try readIfPresent(dropIn) { try config.apply(text: text, file: dropIn) }
            }
        }
        collect { () throws(ConfigError) in try config.validateSignals() }
        collect { () throws(ConfigError) in try config.validateReport() }
        collect { () throws(ConfigError) in try config.validateClientCertificates() }
        collect { () throws(ConfigError) in try config.validateTrustedKeys() }
        collect { () throws(ConfigError) in try config.validateWindowZones(exists: TimeZoneName.exists) }
        // Every problem at once; the unknown keys too, which may be what caused the others.
        if let error = ConfigError.combining(problems + (problems.isEmpty ? [] : config.warnings)) { throw error }
        return config
    }

    /// Loads the same files as ``load(explicitPath:environment:defaultPath:)`` for a command that
    /// only reads (`get`, `status`): a bad line never stops it. Each bad line is skipped (a bad
    /// value leaves its key at the built-in default) and returned as a problem for the caller to
    /// warn about; an unreadable file is a problem too, and the checks across keys are left to
    /// the daemon and `doctor`. Only a file the user named that is missing is an error.
    public static func loadForReading(
        explicitPath: String? = nil, environment: [String: String] = [:], defaultPath: String = defaultPath
    ) throws(ConfigError) -> (config: AgentConfig, problems: [ConfigError]) {
        let named = explicitPath ?? environment["RCAGENT_CONFIG"].flatMap { $0.isEmpty ? nil : $0 }
        let path = named ?? defaultPath
        var config = AgentConfig()
        var problems: [ConfigError] = []
        func applyFile(_ file: String) -> Bool {
            let text: String?
            do { text = try readIfPresent(file) } catch {
                problems.append(error)
                return true
            }
            guard let text else { return false }
            problems += config.applySkippingBadLines(text: text, file: file)
            return true
        }
        if !applyFile(path), named != nil {
            throw ConfigError(SourceLocation(file: path, line: 0), "config file not found")
        }
        for name in dropIns(in: path + ".d") { _ = applyFile(path + ".d/" + name) }
        return (config, problems)
    }

    private static func readIfPresent(_ path: String) throws(ConfigError) -> String? {
        let bytes: [UInt8]
        do {
            guard let read = try FileBytes.read(path) else { return nil }
            bytes = read
        } catch {
            throw ConfigError(SourceLocation(file: path, line: 0), "cannot read: \(error)")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ConfigError(SourceLocation(file: path, line: 0), "not valid UTF-8")
        }
        return text
    }

    private static func dropIns(in directory: String) -> [String] {
        FileBytes.directoryEntries(directory).filter { $0.hasSuffix(".conf") && !$0.hasPrefix(".") }.sorted {
            Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8))
        }
    }
}
