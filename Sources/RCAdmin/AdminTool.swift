import Dispatch
import Glibc
import RCCore
import RCSystem
import Synchronization

/// `rcadmin`: the operator and CI tool. A dispatcher over the commands declared in Commands/ (each
/// one data: words, synopsis, help, options, what it runs) plus the relay service. Errors are
/// reported here, once, as `Error: MESSAGE` on stderr with the exit code the failure's kind gives:
/// 0 ok, 1 failure, 64 usage error, 69 Google or the broker unreachable after the retries.
public enum AdminTool {
    static let commands: [AdminCommand] = [
        TokenCommands.projectId, TokenCommands.token, TemplateCommands.get, TemplateCommands.publish,
        TemplateHistoryCommands.versions, TemplateHistoryCommands.rollback, TemplateHistoryCommands.diff,
        SetUpdateCommand.command, NotifyCommand.notifyStale, ActivityCommand.start, ActivityCommand.update,
        ActivityCommand.end, FleetStatusCommand.command, FleetExporterCommand.command, KeyCommands.generate,
        SignCommands.sign, SignCommands.verify,
    ]

    /// The overview `rcadmin --help` prints: every command's synopsis.
    static var usage: String {
        var text = "Usage: rcadmin COMMAND [OPTIONS]   (rcadmin COMMAND --help for one command)\n\n"
        for command in commands { text += command.synopsis(after: "  rcadmin \(command.name) ") + "\n" }
        text += "  rcadmin relay --config FILE\n\n"
        text += "Commands that call Google take --service-account FILE (else GOOGLE_APPLICATION_CREDENTIALS)\n"
        text += "and --endpoint URL (else RCADMIN_ENDPOINT). Exit codes: 0 ok, 1 failure, 64 usage error,\n"
        text += "69 Google or the MQTT broker unreachable after retries.\n"
        return text
    }

    public static func main(arguments: [String]) -> Int32 {
        guard let first = arguments.first else { return usageError("no command given") }
        switch first {
        case "--help", "-h", "help":
            Output.data(usage)
            return 0
        case "--version":
            // `rcadmin --version 1.5.0 --platform linux ...` (the command word forgotten) must not
            // print a version and exit 0 as if a CI step had done its work.
            guard arguments.count == 1 else {
                return usageError(
                    "--version takes no arguments (it prints rcadmin's version); set-update --version V "
                        + "sets an update's version")
            }
            Output.data("rcadmin \(BuildInfo.version)\n")
            return 0
        case "relay":
            // The relay is a service with its own lifecycle (signals, sd_notify), not a command
            // that runs once: it keeps its own entry point.
            return relay(Array(arguments.dropFirst()), environment: Environment.current())
        default:
            break
        }
        // No command's words are a prefix of another's, so the first match is the only one.
        if let command = commands.first(where: { arguments.starts(with: $0.words) }) {
            return run(command, Array(arguments.dropFirst(command.words.count)), environment: Environment.current())
        }
        // `rcadmin template` alone, or with a word it does not know: name the ones it does.
        let group = commands.filter { $0.words.count > 1 && $0.words[0] == first }
        guard !group.isEmpty else { return usageError("unknown command '\(TextEscaping.terminal(first))'") }
        let names = group.map { $0.words[1] }.joined(separator: ", ")
        if arguments.count > 1 && ["--help", "-h"].contains(arguments[1]) {
            Output.data(group.map { $0.usageLine + "\n" }.joined())
            return 0
        }
        let what =
            arguments.count > 1
            ? "unknown \(first) command '\(TextEscaping.terminal(arguments[1]))'" : "\(first) needs a command"
        return usageError("\(what): \(names)")
    }

    /// Parses `arguments` for `command`, runs it and turns its outcome into the exit code.
    static func run(_ command: AdminCommand, _ arguments: [String], environment: [String: String]) -> Int32 {
        let options: ParsedOptions
        do { options = try ParsedOptions(arguments, options: command.options) } catch {
            return report(error, command: command)
        }
        if options.help {
            Output.data(command.helpText)
            return 0
        }
        // Checked before the command runs, so a stray argument never reaches Google.
        guard command.arguments.contains(options.positionals.count) else {
            let count = options.positionals.count
            let expected =
                command.arguments.lowerBound == command.arguments.upperBound
                ? "\(command.arguments.lowerBound)"
                : "\(command.arguments.lowerBound) or \(command.arguments.upperBound)"
            return report(.usage("\(command.name) takes \(expected) argument(s), got \(count)"), command: command)
        }
        // A closed pipe (`rcadmin template get | head`) is a failed write, not the end of the process.
        signal(SIGPIPE, SIG_IGN)
        let failure = blockingWait { () async -> AdminFailure? in
            do throws(AdminFailure) { try await command.run(options, environment) } catch { return error }
            return nil
        }
        return failure.map { report($0, command: command) } ?? 0
    }

    /// Prints `failure` once; a usage error also shows the command's usage line.
    static func report(_ failure: AdminFailure, command: AdminCommand) -> Int32 {
        var text = "Error: \(failure.message)\n"
        if failure.kind == .usage { text += "\(command.usageLine)\nRun 'rcadmin \(command.name) --help' for more.\n" }
        Output.error(text)
        return failure.exitCode
    }

    /// A usage error outside any one command (and the relay's): the message and the overview.
    static func usageError(_ message: String) -> Int32 {
        Output.error("Error: \(message)\n\(usage)")
        return 64
    }

    /// A failure reported by the relay's entry point: exit 1.
    static func failure(_ message: String) -> Int32 {
        Output.error("Error: \(message)\n")
        return 1
    }
}
