import RCCore

/// `rcagent rollback [VERSION] [--json]`: asks the daemon to re-activate a kept snapshot (the newest
/// older than the active one that is not rejected, or VERSION) and to reject the versions after it;
/// prints the keys that changed back, one per line. The hooks run as for any activation.
enum RollbackCommand {
    static let spec = CommandSpec(
        "rollback", arguments: ["VERSION"], optionalArguments: 1,
        summary: "Re-activate a kept snapshot, rejecting the versions after it; print the changed keys.",
        options: [.flag("json", "print the daemon's response as JSON")], run: run)

    static func run(_ invocation: Invocation) throws(CLIError) -> Int32 {
        let version = invocation.arguments.positionals.first
        let answer = try invocation.request(
            .rollback(version: version), expecting: RollbackResponse.self, timeout: .seconds(30))
        if invocation.json {
            Output.raw(answer.json.compactText + "\n")
        } else {
            let active = answer.response.templateVersion ?? "(none)"
            Output.err("rolled back to template \(active)\n")
            Output.out(answer.response.changedKeys.map { "\($0)\n" as TerminalText }.joined())
        }
        return ExitCode.ok
    }
}
