import RCCore
import RCStore
import RCSystem

/// `rcagent`: the device CLI. Reads come straight from the SQLite cache (the daemon may be down);
/// commands that change the daemon's behaviour go over its control socket.
public enum CommandLineTool {
    public static let version = BuildInfo.version

    static let globalOptions: [OptionSpec] = [
        .value("config", "PATH", "config file (default: $RCAGENT_CONFIG or \(AgentConfig.defaultPath))"),
        .flag("help", "show this help"),
    ]

    static let commands: [CommandSpec] = [
        GetCommand.spec,
        ListCommand.spec,
        StatusCommand.spec,
        MarkStaleCommand.spec,
        FetchCommand.spec,
        ActivateCommand.spec,
        RollbackCommand.spec,
        ReloadCommand.spec,
        NotifyCommand.spec,
        WatchCommand.spec,
        ActivityCommand.spec,
        CheckUpdateCommand.spec,
        DoctorCommand.spec,
        HistoryCommand.spec,
        HoldCommand.spec,
    ]

    static var overview: String {
        var text = "Usage: rcagent COMMAND [options]\n\nCommands:\n"
        for command in commands { text += "  " + command.name.padding(to: 14) + command.summary + "\n" }
        text += "\nGlobal options: --config PATH, --help, --version\n"
        text += "Exit codes: 0 ok, 1 failure, 64 usage, 65 value not of the requested type, 69 daemon unavailable;\n"
        text += "check-update: 100 recommended update, 101 required update.\n"
        return text
    }

    /// The environment variables the commands read (rcagent(1), ENVIRONMENT): only these are taken
    /// from the environment (a hold's command inherits the whole of it from `environ`).
    public static let environmentVariables = ["RCAGENT_CONFIG", "RCAGENT_DPKG_STATUS"]

    /// Runs one command line and returns the process exit code.
    public static func main(
        arguments: [String], environment: [String: String] = Environment.current(environmentVariables)
    ) -> Int32 {
        var arguments = arguments
        // Global options may also come before the command: `rcagent --config FILE get KEY`.
        var leading: [String] = []
        while let first = arguments.first, first.hasPrefix("--config") {
            leading.append(arguments.removeFirst())
            if first == "--config", !arguments.isEmpty { leading.append(arguments.removeFirst()) }
        }
        guard let first = arguments.first else {
            Output.err("Error: no command given\n" + TerminalText(verbatim: overview))
            return ExitCode.usage
        }
        switch first {
        case "--help", "-h", "help":
            Output.out(TerminalText(verbatim: overview))
            return ExitCode.ok
        case "--version":
            Output.out("rcagent \(version)\n")
            return ExitCode.ok
        default:
            break
        }
        guard let command = commands.first(where: { $0.name == first }) else {
            return report(.usage("unknown command '\(first)'", command: nil))
        }
        do {
            let parsed = try ParsedArguments.parse(leading + arguments.dropFirst(), for: command)
            if parsed.has("help") {
                Output.out(TerminalText(verbatim: command.help))
                return ExitCode.ok
            }
            return try command.run(Invocation(command: command, arguments: parsed, environment: environment))
        } catch {
            return report(error)
        }
    }

    private static func report(_ error: CLIError) -> Int32 {
        // The message may quote remote text (a fetch error, an HTTP body): escaped as one line.
        Output.err(
            "Error: \(error.message)\n" + error.details.map { "\($0)\n" as TerminalText }.joined()
                + TerminalText(verbatim: error.usage.map { $0.hasSuffix("\n") ? $0 : $0 + "\n" } ?? ""))
        return error.exitCode
    }
}

/// One run of a command: its arguments and, loaded on first use, the config and the cache.
final class Invocation {
    let command: CommandSpec
    let arguments: ParsedArguments
    let environment: [String: String]
    private var loadedConfig: AgentConfig?

    init(command: CommandSpec, arguments: ParsedArguments, environment: [String: String]) {
        self.command = command
        self.arguments = arguments
        self.environment = environment
    }

    var json: Bool { arguments.has("json") }

    /// The commands that only read: they never fail because of a config line they do not need.
    static let readCommands = ["get", "list", "status", "check-update", "activity", "history"]

    /// The config. A read command warns once about each bad line and goes on without it (a kiosk
    /// script keeps its values when someone leaves a typo in an unrelated drop-in); every other
    /// command fails on it, as the daemon and `doctor` do.
    func config() throws(CLIError) -> AgentConfig {
        if let loadedConfig { return loadedConfig }
        let path = arguments.value("config")
        do {
            let config: AgentConfig
            if Self.readCommands.contains(command.name) {
                let (read, problems) = try AgentConfig.loadForReading(explicitPath: path, environment: environment)
                for problem in problems { Output.err("Warning: \(problem.location): \(problem.message), ignoring\n") }
                config = read
            } else {
                config = try AgentConfig.load(explicitPath: path, environment: environment)
            }
            loadedConfig = config
            return config
        } catch {
            // Every problem of the load, one per line (agent.conf(5)): the first after the prefix.
            var failure = CLIError.failure("bad config: \(error.location): \(error.message)")
            failure.details = error.others.map { "\($0.location): \($0.message)" }
            throw failure
        }
    }

    /// The cache as the CLI reads it (database, else the defaults file).
    func values() throws(CLIError) -> ValueReader {
        try ValueReader(config: config())
    }
}
