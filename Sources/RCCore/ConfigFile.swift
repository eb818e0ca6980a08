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
        var text = text
        return text.withUTF8 { scan(bytes: $0, file: file, stoppingAtFirstProblem: stoppingAtFirstProblem) }
    }

    /// The scan, by bytes: every byte it looks for is ASCII, and UTF-8 never uses an ASCII byte
    /// inside a multi-byte scalar. (A scan by `Character` cost more than the rest of `rcagent get`
    /// together.) A sign counts only where it is a character of its own (``standsAlone(_:_:)``), as
    /// it did when the scan went by `Character`. A line ends at LF; a CR before it, like any space,
    /// tab or CR at either end of a line, is trimmed.
    private static func scan(bytes text: UnsafeBufferPointer<UInt8>, file: String, stoppingAtFirstProblem: Bool)
        -> (entries: [ConfigEntry], problems: [ConfigError])
    {
        var entries: [ConfigEntry] = []
        var problems: [ConfigError] = []
        var section: String?
        var sectionIsReadable = true
        var lineNumber = 0
        var lineStart = 0
        while lineStart <= text.count {
            if stoppingAtFirstProblem && !problems.isEmpty { break }
            var lineEnd = lineStart
            while lineEnd < text.count && text[lineEnd] != Byte.newline { lineEnd += 1 }
            let line = trimmed(UnsafeBufferPointer(rebasing: text[lineStart..<lineEnd]))
            lineStart = lineEnd + 1
            lineNumber += 1
            guard let first = line.first else { continue }
            let firstStandsAlone = standsAlone(line, 0)
            if firstStandsAlone && (first == Byte.hash || first == Byte.semicolon) { continue }
            let location = SourceLocation(file: file, line: lineNumber)
            if firstStandsAlone && first == Byte.openBracket {
                let name =
                    line.count > 1 && line[line.count - 1] == Byte.closeBracket
                    ? string(trimmed(UnsafeBufferPointer(rebasing: line[1..<(line.count - 1)]))) : ""
                sectionIsReadable = !name.isEmpty
                guard !name.isEmpty else {
                    problems.append(
                        ConfigError(location, "malformed section header '\(string(line))', expected [Name]"))
                    continue
                }
                section = name
                continue
            }
            guard sectionIsReadable else { continue }
            guard let equals = line.indices.first(where: { line[$0] == Byte.equals && standsAlone(line, $0) }) else {
                problems.append(ConfigError(location, "expected Key=Value, got '\(string(line))'"))
                continue
            }
            let keyBytes = trimmed(UnsafeBufferPointer(rebasing: line[..<equals]))
            let key = string(keyBytes)
            guard !keyBytes.isEmpty, keyBytes.allSatisfy(isKeyByte) else {
                problems.append(ConfigError(location, "invalid key '\(key)'"))
                continue
            }
            guard let section else {
                problems.append(ConfigError(location, "'\(key)=' appears before any [Section] header"))
                continue
            }
            let value = withoutComment(UnsafeBufferPointer(rebasing: line[(equals + 1)...]))
            entries.append(ConfigEntry(section: section, key: key, value: string(value), location: location))
        }
        return (entries, problems)
    }

    private enum Byte {
        static let newline = UInt8(ascii: "\n")
        static let hash = UInt8(ascii: "#")
        static let semicolon = UInt8(ascii: ";")
        static let openBracket = UInt8(ascii: "[")
        static let closeBracket = UInt8(ascii: "]")
        static let equals = UInt8(ascii: "=")
    }

    /// Whether the ASCII byte at `index` is a character of its own: what follows does not extend it.
    /// A keycap `#️⃣` is `#` followed by U+FE0F U+20E3, one character, and no comment; `=` followed
    /// by U+0338 is `≠`. Only a scalar outside ASCII can extend one, so the common case is one
    /// comparison.
    private static func standsAlone(_ bytes: UnsafeBufferPointer<UInt8>, _ index: Int) -> Bool {
        let next = index + 1
        guard next < bytes.count, bytes[next] >= 0x80 else { return true }
        var rest = bytes[next...].makeIterator()
        var decoder = UTF8()
        guard case let .scalarValue(scalar) = decoder.decode(&rest) else { return true }
        var pair = String.UnicodeScalarView()
        pair.append(Unicode.Scalar(bytes[index]))
        pair.append(scalar)
        return String(pair).count == 2
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r")
    }

    /// ASCII letters and digits, `-`, `_` and `.`.
    private static func isKeyByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
            true
        default: false
        }
    }

    private static func trimmed(_ bytes: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        var start = 0
        var end = bytes.count
        while start < end && isSpace(bytes[start]) && standsAlone(bytes, start) { start += 1 }
        while end > start && isSpace(bytes[end - 1]) { end -= 1 }
        return UnsafeBufferPointer(rebasing: bytes[start..<end])
    }

    /// The value before a comment: a `#` or `;` at its start or after a space or tab.
    private static func withoutComment(_ value: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        var previousWasSpace = true
        for index in value.indices {
            let byte = value[index]
            if (byte == Byte.hash || byte == Byte.semicolon) && previousWasSpace && standsAlone(value, index) {
                return trimmed(UnsafeBufferPointer(rebasing: value[..<index]))
            }
            previousWasSpace = byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t")
        }
        return trimmed(value)
    }

    /// Cut only next to ASCII bytes, from a valid string: valid UTF-8.
    private static func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        String(decoding: bytes, as: UTF8.self)
    }
}
