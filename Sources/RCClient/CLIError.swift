/// The CLI's exit codes.
enum ExitCode {
    static let ok: Int32 = 0
    static let failure: Int32 = 1
    static let usage: Int32 = 64
    static let badValue: Int32 = 65
    static let unavailable: Int32 = 69
}

/// An error the CLI reports once, as `Error: ...` on stderr, with its exit code.
struct CLIError: Error, CustomStringConvertible {
    let message: String
    let exitCode: Int32
    /// Printed after the message for usage errors.
    var usage: String?
    /// Further problems of the same failure, each printed on a line of its own after the message
    /// (the other bad lines of a config file): escaped like the message, never joined into it.
    var details: [String] = []

    var description: String { message }

    static func failure(_ message: String) -> CLIError { CLIError(message: message, exitCode: ExitCode.failure) }

    static func usage(_ message: String, command: CommandSpec?) -> CLIError {
        CLIError(
            message: message, exitCode: ExitCode.usage,
            usage: command.map { "Usage: \($0.usage)\nSee 'rcagent \($0.name) --help'." } ?? CommandLineTool.overview)
    }

    static func badValue(_ message: String) -> CLIError { CLIError(message: message, exitCode: ExitCode.badValue) }

    static func unavailable(_ message: String) -> CLIError {
        CLIError(message: message, exitCode: ExitCode.unavailable)
    }
}
