import RCCore

/// Why an `rcadmin` command stopped, and so its exit code: the device CLI's codes, so a CI script
/// can tell "fix the command line" (64) from "try again later" (69) from "this failed" (1).
/// Thrown by every command and reported once, by ``AdminTool``.
struct AdminFailure: Error, CustomStringConvertible, Sendable {
    enum Kind: Sendable {
        /// The command line is wrong (unknown option, missing value, bad number): exit 64.
        case usage
        /// The work failed (a refused publish, a bad file, an API error): exit 1.
        case failure
        /// Google's API or the MQTT broker could not be reached, or kept answering "later", after
        /// the retries: exit 69 (EX_UNAVAILABLE), worth running again.
        case unavailable
    }

    let kind: Kind
    let message: String

    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    static func usage(_ message: String) -> AdminFailure { AdminFailure(.usage, message) }
    static func failure(_ message: String) -> AdminFailure { AdminFailure(.failure, message) }

    var exitCode: Int32 {
        switch kind {
        case .usage: 64
        case .failure: 1
        case .unavailable: 69
        }
    }

    var description: String { message }
}

/// One option a command accepts: `--name VALUE` when `value` names the value, a flag otherwise.
struct OptionSpec: Sendable {
    let name: String
    /// The value's placeholder in help (`FILE`, `N`); `nil` for a flag.
    let value: String?
    /// A one-letter alias (`o` for `-o`).
    var short: Character? = nil

    static func flag(_ name: String) -> OptionSpec { OptionSpec(name: name, value: nil) }
    static func value(_ name: String, _ placeholder: String, short: Character? = nil) -> OptionSpec {
        OptionSpec(name: name, value: placeholder, short: short)
    }
}

/// A command as data: its words (`["template", "get"]`), its help, the options it takes and what
/// it does. The dispatcher, the help text and the option parser all read this one declaration.
struct AdminCommand: Sendable {
    let words: [String]
    /// The synopsis lines after `rcadmin <words>`.
    let synopsis: String
    /// What the command does, for `--help`.
    let help: String
    let options: [OptionSpec]
    /// How many positional arguments it takes.
    let arguments: ClosedRange<Int>
    let run: @Sendable (ParsedOptions, [String: String]) async throws(AdminFailure) -> Void

    var name: String { words.joined(separator: " ") }
    var usageLine: String { synopsis(after: "Usage: rcadmin \(name) ") }

    /// `prefix` and the synopsis, its continuation lines indented to line up after `prefix`.
    func synopsis(after prefix: String) -> String {
        let lines = synopsis.split(separator: "\n").map { $0.drop { $0 == " " } }
        return prefix + lines.joined(separator: "\n" + String(repeating: " ", count: prefix.count))
    }
    var helpText: String { "\(usageLine)\n\n\(help)\n" }

    /// Where the service account and Google's APIs are: every command that calls Google takes these.
    static let accountOptions: [OptionSpec] = [.value("service-account", "FILE"), .value("endpoint", "URL")]
    /// ``accountOptions`` and `--json`, for commands whose output is data.
    static let googleOptions: [OptionSpec] = accountOptions + [.flag("json")]
}

/// A command line after parsing: the positional arguments and each option's value (or presence).
/// Options may come anywhere after the command's words; `--name=value` and `--name value` are the
/// same; `--` ends the options (a file named `-x`). Repeating an option is a usage error rather
/// than "the last one wins": in a CI script a repeated `--version` is a mistake to point out.
struct ParsedOptions: Sendable {
    private(set) var positionals: [String] = []
    private var values: [String: String] = [:]
    private var flags: Set<String> = []
    /// Whether `--help` (or `-h`) was given: the command prints its help and does nothing else.
    private(set) var help = false

    init(_ arguments: [String], options: [OptionSpec]) throws(AdminFailure) {
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            // A lone `-` is an argument (stdin, by convention), never an option.
            if optionsEnded || argument == "-" || !argument.hasPrefix("-") {
                positionals.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            if argument == "--help" || argument == "-h" {
                help = true
                continue
            }
            var name: String
            var inline: String?
            if argument.hasPrefix("--") {
                name = String(argument.dropFirst(2))
                if let equals = name.firstIndex(of: "=") {
                    inline = String(name[name.index(after: equals)...])
                    name = String(name[..<equals])
                }
            } else {
                name = String(argument.dropFirst())
            }
            let shown = TextEscaping.terminal(argument)
            guard
                let spec = options.first(where: {
                    argument.hasPrefix("--") ? $0.name == name : ($0.short.map { String($0) } == name)
                })
            else { throw .usage("unknown option '\(shown)'") }
            guard !values.keys.contains(spec.name), !flags.contains(spec.name) else {
                throw .usage("option '--\(spec.name)' given twice")
            }
            if spec.value == nil {
                guard inline == nil else { throw .usage("option '--\(spec.name)' takes no value") }
                flags.insert(spec.name)
            } else if let inline {
                values[spec.name] = inline
            } else {
                guard index < arguments.count else { throw .usage("option '--\(spec.name)' needs a value") }
                // `--description --dry-run` is a forgotten value, not a description: taking the
                // next option as the value would turn the dry run into a real publish. A value that
                // starts with `-` is given as `--name=VALUE`.
                let next = arguments[index]
                if next == "--" || Self.names(next, anOptionOf: options) {
                    throw .usage(
                        "option '--\(spec.name)' needs a value, got the option '\(TextEscaping.terminal(next))' "
                            + "(write --\(spec.name)=VALUE for a value that starts with '-')")
                }
                values[spec.name] = next
                index += 1
            }
        }
    }

    /// Whether `argument` is one of `options` (or help) as the parser would read it.
    private static func names(_ argument: String, anOptionOf options: [OptionSpec]) -> Bool {
        if argument == "--help" || argument == "-h" { return true }
        if argument.hasPrefix("--") {
            let name = argument.dropFirst(2).prefix { $0 != "=" }
            return options.contains { $0.name == name }
        }
        guard argument.hasPrefix("-"), argument.count == 2, let letter = argument.last else { return false }
        return options.contains { $0.short == letter }
    }

    func flag(_ name: String) -> Bool { flags.contains(name) }

    func value(_ name: String) -> String? { values[name] }

    /// `--name N` as a whole number within `range`, or `nil` when absent.
    func integer(_ name: String, in range: ClosedRange<Int64> = 1...Int64.max) throws(AdminFailure) -> Int64? {
        guard let text = values[name] else { return nil }
        return try Self.integer(text, what: "--\(name)", in: range)
    }

    /// `text` as a whole decimal number within `range`; `what` names it in the usage error.
    static func integer(_ text: String, what: String, in range: ClosedRange<Int64> = 1...Int64.max)
        throws(AdminFailure) -> Int64
    {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let number = Int64(text),
            range.contains(number)
        else {
            throw .usage(
                "\(what) must be a whole number from \(range.lowerBound), got '\(TextEscaping.terminal(text))'")
        }
        return number
    }

    /// `--name VALUE` that must be one of `choices`.
    func choice(_ name: String, _ choices: [String]) throws(AdminFailure) -> String? {
        guard let text = values[name] else { return nil }
        guard choices.contains(text) else {
            throw .usage(
                "--\(name) must be one of \(choices.joined(separator: ", ")), got '\(TextEscaping.terminal(text))'")
        }
        return text
    }
}
