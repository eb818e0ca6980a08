/// A place in a config file, for error messages (`/etc/rcagent/agent.conf:12`).
public struct SourceLocation: Sendable, Equatable, CustomStringConvertible {
    public let file: String
    public let line: Int

    public init(file: String, line: Int) {
        self.file = file
        self.line = line
    }

    public var description: String { line > 0 ? "\(file):\(line)" : file }
}

/// A config error names the file, the line and what is wrong with it.
public struct ConfigError: Error, CustomStringConvertible, Sendable, Equatable {
    public let location: SourceLocation
    public let message: String
    /// The other problems found in the same load: every one is reported at once, so a fix is not
    /// followed by the next error, and a misspelt key is not hidden behind the error it causes.
    public var others: [ConfigError] = []

    public init(_ location: SourceLocation, _ message: String) {
        self.location = location
        self.message = message
    }

    /// The first problem and, on lines of their own, the others.
    public var description: String {
        ([self] + others).map { "\($0.location): \($0.message)" }.joined(separator: "\n")
    }

    /// `problems` as one error (`nil` when there are none).
    package static func combining(_ problems: [ConfigError]) -> ConfigError? {
        guard let head = problems.first else { return nil }
        var first = ConfigError(head.location, head.message)
        first.others = head.others + problems.dropFirst().flatMap { [ConfigError($0.location, $0.message)] + $0.others }
        return first
    }
}

/// One `Key=Value` assignment, with the section it belongs to and where it was written.
public struct ConfigEntry: Sendable, Equatable {
    public let section: String
    public let key: String
    public let value: String
    public let location: SourceLocation
}

/// The systemd-style INI syntax: `[Section]`, `Key=Value`, `#`/`;` comment lines, and
/// comments after a value when the `#` or `;` follows white space (`Jitter=3s  # why`).
public enum ConfigFile {
    public static func parse(_ text: String, file: String) throws(ConfigError) -> [ConfigEntry] {
        let (entries, problems) = scan(text, file: file, stoppingAtFirstProblem: true)
        if let problem = problems.first { throw problem }
        return entries
    }

    /// Parses past bad lines for a reader that needs only some keys (`rcagent get`): each bad line
    /// is a problem and is skipped, and so are the assignments under a malformed section header
    /// (they belong to no section anyone can name).
    public static func parseSkippingBadLines(_ text: String, file: String) -> (
        entries: [ConfigEntry], problems: [ConfigError]
    ) {
        scan(text, file: file, stoppingAtFirstProblem: false)
    }

    private static func scan(_ text: String, file: String, stoppingAtFirstProblem: Bool) -> (
        entries: [ConfigEntry], problems: [ConfigError]
    ) {
        var entries: [ConfigEntry] = []
        var problems: [ConfigError] = []
        var section: String?
        var sectionIsReadable = true
        var lineNumber = 0
        // "\r\n" is one Character in Swift: split on it too, or a CRLF file reads as one line.
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            if stoppingAtFirstProblem && !problems.isEmpty { break }
            lineNumber += 1
            let location = SourceLocation(file: file, line: lineNumber)
            let line = rawLine.trimmingSpaces()
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") {
                let name = line.hasSuffix("]") ? String(line.dropFirst().dropLast().trimmingSpaces()) : ""
                sectionIsReadable = !name.isEmpty
                guard !name.isEmpty else {
                    problems.append(ConfigError(location, "malformed section header '\(line)', expected [Name]"))
                    continue
                }
                section = name
                continue
            }
            guard sectionIsReadable else { continue }
            guard let equals = line.firstIndex(of: "=") else {
                problems.append(ConfigError(location, "expected Key=Value, got '\(line)'"))
                continue
            }
            let key = String(line[..<equals].trimmingSpaces())
            guard !key.isEmpty, key.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) })
            else {
                problems.append(ConfigError(location, "invalid key '\(key)'"))
                continue
            }
            guard let section else {
                problems.append(ConfigError(location, "'\(key)=' appears before any [Section] header"))
                continue
            }
            let value = stripComment(line[line.index(after: equals)...])
            entries.append(ConfigEntry(section: section, key: key, value: value, location: location))
        }
        return (entries, problems)
    }

    private static func stripComment(_ value: Substring) -> String {
        var previousWasSpace = true
        for index in value.indices {
            let c = value[index]
            if (c == "#" || c == ";") && previousWasSpace {
                return String(value[..<index].trimmingSpaces())
            }
            previousWasSpace = c == " " || c == "\t"
        }
        return String(value.trimmingSpaces())
    }
}
