/// An option a command accepts: `--name VALUE` (or `--name=VALUE`) when it takes a value, else a flag.
struct OptionSpec: Sendable {
    let name: String
    let value: String?
    let help: String

    static func flag(_ name: String, _ help: String) -> OptionSpec { OptionSpec(name: name, value: nil, help: help) }
    static func value(_ name: String, _ placeholder: String, _ help: String) -> OptionSpec {
        OptionSpec(name: name, value: placeholder, help: help)
    }
}

/// A command declared as data: its name, arguments, options and what runs it.
struct CommandSpec: Sendable {
    let name: String
    let arguments: [String]
    let optionalArguments: Int
    let summary: String
    let options: [OptionSpec]
    /// The last argument repeats (`hold -- COMMAND [ARG...]`): any number of positionals are taken.
    let variadic: Bool
    let run: @Sendable (Invocation) throws(CLIError) -> Int32

    init(
        _ name: String, arguments: [String] = [], optionalArguments: Int = 0, variadic: Bool = false, summary: String,
        options: [OptionSpec] = [], run: @escaping @Sendable (Invocation) throws(CLIError) -> Int32
    ) {
        self.name = name
        self.arguments = arguments
        self.optionalArguments = optionalArguments
        self.variadic = variadic
        self.summary = summary
        self.options = options
        self.run = run
    }

    var usage: String {
        let args = arguments.enumerated().map { index, name in
            index >= arguments.count - optionalArguments ? "[\(name)]" : name
        }
        return (["rcagent", name] + args + (options.isEmpty ? [] : ["[options]"])).joined(separator: " ")
    }

    var help: String {
        var text = "Usage: \(usage)\n\n\(summary)\n"
        let all = options + CommandLineTool.globalOptions
        text += "\nOptions:\n"
        for option in all {
            let left = "  --\(option.name)" + (option.value.map { " \($0)" } ?? "")
            text += left.padding(to: 28) + option.help + "\n"
        }
        return text
    }
}

/// The parsed command line of one command.
struct ParsedArguments: Sendable {
    var positionals: [String] = []
    var values: [String: String] = [:]
    var flags: Set<String> = []

    func value(_ name: String) -> String? { values[name] }
    func has(_ name: String) -> Bool { flags.contains(name) }

    /// Reads `args` against the options of `command` and the global options.
    static func parse(_ args: [String], for command: CommandSpec) throws(CLIError) -> ParsedArguments {
        let options = command.options + CommandLineTool.globalOptions
        var parsed = ParsedArguments()
        var index = 0
        var onlyPositionals = false
        while index < args.count {
            let arg = args[index]
            index += 1
            if onlyPositionals || !arg.hasPrefix("-") || arg == "-" {
                parsed.positionals.append(arg)
                continue
            }
            if arg == "--" {
                onlyPositionals = true
                continue
            }
            if arg == "-h" {
                parsed.flags.insert("help")
                continue
            }
            guard arg.hasPrefix("--") else { throw .usage("unknown option '\(arg)'", command: command) }
            var name = String(arg.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard let option = options.first(where: { $0.name == name }) else {
                throw .usage("unknown option '--\(name)'", command: command)
            }
            if option.value == nil {
                guard inlineValue == nil else { throw .usage("option '--\(name)' takes no value", command: command) }
                parsed.flags.insert(name)
            } else if let inlineValue {
                parsed.values[name] = inlineValue
            } else {
                guard index < args.count else { throw .usage("option '--\(name)' needs a value", command: command) }
                parsed.values[name] = args[index]
                index += 1
            }
        }
        if parsed.has("help") { return parsed }
        let required = command.arguments.count - command.optionalArguments
        if parsed.positionals.count < required {
            throw .usage("missing \(command.arguments[parsed.positionals.count])", command: command)
        }
        if parsed.positionals.count > command.arguments.count && !command.variadic {
            throw .usage("unexpected argument '\(parsed.positionals[command.arguments.count])'", command: command)
        }
        return parsed
    }
}

extension String {
    func padding(to width: Int) -> String {
        count >= width ? self + " " : self + String(repeating: " ", count: width - count)
    }
}
