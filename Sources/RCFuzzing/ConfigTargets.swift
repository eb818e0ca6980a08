import RCCore

/// The config file: the INI syntax, the keys and their values.
enum ConfigTargets {
    static let all = [config, durations]

    static let file = "fuzz.conf"

    /// `ConfigFile.parse` and `AgentConfig.apply`.
    static let config = FuzzTarget(
        "config", checkConfig,
        """
        agent.conf text: errors name file:line within the text; entries re-rendered as canonical INI parse \
        back the same, and give the same AgentConfig
        """)

    private static func checkConfig(_ check: Checker, _ bytes: [UInt8]) throws(PropertyViolation) -> FuzzOutcome {
        let source = text(bytes)
        let lineCount = lines(of: source)
        let entries: [ConfigEntry]
        do {
            entries = try ConfigFile.parse(source, file: file)
        } catch {
            try requireLocated(error, lineCount: lineCount, check)
            var config = AgentConfig()
            let applied = capture { () throws(ConfigError) in try config.apply(text: source, file: file) }
            try check.require(
                applied == error,
                "AgentConfig said \(applied.map { "\"\($0)\"" } ?? "nothing"), ConfigFile \"\(error)\"")
            return .rejected
        }
        var previousLine = 0
        for entry in entries {
            try check.require(
                entry.location.file == file && entry.location.line > previousLine && entry.location.line <= lineCount,
                "entry \(entry.key) at \(entry.location) is out of order or outside lines 1...\(lineCount)")
            try check.require(!entry.key.isEmpty && !entry.section.isEmpty, "an entry without key or section")
            previousLine = entry.location.line
        }

        // The canonical rendering reads back as the same assignments.
        let canonical = render(entries)
        let reparsed: [ConfigEntry]
        do { reparsed = try ConfigFile.parse(canonical, file: file) } catch {
            throw PropertyViolation(
                target: check.target, message: "canonical rendering \(canonical.debugDescription) fails: \(error)",
                location: "\(#fileID):\(#line)")
        }
        try check.require(
            reparsed.map(\.assignment) == entries.map(\.assignment),
            "canonical rendering \(canonical.debugDescription) reads back differently")

        // And it configures the agent the same way (same values, same warnings, or the same error).
        var original = AgentConfig()
        var rendered = AgentConfig()
        let originalError = capture { () throws(ConfigError) in try original.apply(text: source, file: file) }
        let renderedError = capture { () throws(ConfigError) in try rendered.apply(text: canonical, file: file) }
        if let originalError { try requireLocated(originalError, lineCount: lineCount, check) }
        try check.require(
            originalError?.message == renderedError?.message,
            "the original says \(originalError.map { "\"\($0)\"" } ?? "nothing"), the canonical rendering "
                + "\(renderedError.map { "\"\($0)\"" } ?? "nothing")")
        for warning in original.warnings { try requireLocated(warning, lineCount: lineCount, check) }
        try check.require(
            original.warnings.map(\.message) == rendered.warnings.map(\.message), "warnings differ after re-rendering")
        guard originalError == nil else { return .rejected }
        try check.require(
            snapshot(original) == snapshot(rendered),
            "AgentConfig differs after re-rendering:\n"
                + snapshot(original) + "\nversus\n" + snapshot(rendered))
        _ = try? original.validateSource()
        return .accepted
    }

    /// Durations (`MinimumFetchInterval=`, `Jitter=`...) and sizes (`MaxResponseSize=`).
    static let durations = FuzzTarget(
        "durations", checkDurations,
        """
        duration and size text: parsed values are in range and read back from their formatted text; the \
        config keys accept exactly what the parsers do and name Key= and line in errors
        """)

    private static func checkDurations(_ check: Checker, _ bytes: [UInt8]) throws(PropertyViolation) -> FuzzOutcome {
        let value = text(bytes)
        var accepted = false
        if let duration = DurationText.parse(value) {
            accepted = true
            try check.require(
                duration >= .zero && duration.milliseconds < 1_000_000_000_000_000, "duration \(duration) out of range")
            let formatted = DurationText.format(duration)
            try check.require(
                DurationText.parse(formatted) == duration,
                "\(duration) formats as \"\(formatted)\", which reads back"
                    + " as \(DurationText.parse(formatted).map { "\($0)" } ?? "nothing")")
        }
        if let size = SizeText.parse(value) {
            accepted = true
            try check.require(size > 0, "size \(size) is not positive")
            try check.require(SizeText.parse(String(size)) == size, "size \(size) does not read back")
        }
        // Through the config file: one line, as a value.
        let line =
            value.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
            .first.map(String.init) ?? ""
        for (section, key, parse) in [
            ("Agent", "FetchTimeout", { (v: String) in DurationText.parse(v).map { $0 > .zero } ?? false }),
            ("Source", "MaxResponseSize", { (v: String) in SizeText.parse(v) != nil }),
        ] {
            let source = "[\(section)]\n\(key)=\(line)\n"
            guard let entry = try? ConfigFile.parse(source, file: file).first else { continue }
            var config = AgentConfig()
            let error = capture { () throws(ConfigError) in try config.apply(text: source, file: file) }
            if let error {
                try check.require(
                    error.location.line == 2 && error.message.hasPrefix("\(key)="),
                    "error \"\(error)\" does not name \(key)= on line 2")
            }
            try check.require(
                (error == nil) == (entry.value.isEmpty || parse(entry.value)),
                "\(key)=\(entry.value) was \(error == nil ? "accepted" : "refused") by the config but not the parser")
        }
        return accepted ? .accepted : .rejected
    }

    private static func lines(of text: String) -> Int {
        text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).count
    }

    private static func requireLocated(_ error: ConfigError, lineCount: Int, _ check: Checker)
        throws(PropertyViolation)
    {
        try check.require(
            error.location.file == file && (1...lineCount).contains(error.location.line),
            "error \"\(error)\" is not located on a line of the file (1...\(lineCount))")
        try check.requireNamed(error, prefix: "\(file):\(error.location.line): ")
    }

    private static func render(_ entries: [ConfigEntry]) -> String {
        var out = ""
        var section: String?
        for entry in entries {
            if entry.section != section {
                out += "[\(entry.section)]\n"
                section = entry.section
            }
            out += "\(entry.key)=\(entry.value)\n"
        }
        return out
    }

    private static func capture(_ body: () throws(ConfigError) -> Void) -> ConfigError? {
        do {
            try body()
            return nil
        } catch {
            return error
        }
    }

    /// Every setting of the config, as text (not where each came from).
    private static func snapshot(_ config: AgentConfig) -> String {
        // The assignments are a dictionary, whose printed order varies: listed sorted instead.
        Mirror(reflecting: config).children.filter {
            !["files", "locations", "warnings", "assignments"].contains($0.label)
        }
        .map { "\($0.label ?? "?")=\(String(reflecting: $0.value))" }.joined(separator: "\n")
            + "\nassignments="
            + config.assignments.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")
    }
}

extension ConfigEntry {
    fileprivate var assignment: [String] { [section, key, value] }
}
