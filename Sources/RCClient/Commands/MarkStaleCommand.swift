import RCCore
import RCStore

/// `rcagent mark-stale [--reason TEXT]`: sets the persistent stale flag. With the daemon down it
/// writes the database itself, so the next daemon start fetches regardless of the interval.
enum MarkStaleCommand {
    static let spec = CommandSpec(
        "mark-stale", summary: "Set the stale flag (works with the daemon down; the next fetch ignores the interval).",
        options: [.value("reason", "TEXT", "why (shown in status)")], run: run)

    static func run(_ invocation: Invocation) throws(CLIError) -> Int32 {
        let config = try invocation.config()
        let reason = invocation.arguments.value("reason") ?? "rcagent mark-stale"
        if ControlClient.isRunning(socket: config.socket) {
            // The daemon is the writer while it runs: it persists the flag and starts a fetch.
            let response = try invocation.request(.markStale(reason: reason), timeout: .seconds(30))
            let newlySet = response["newlySet"] == .bool(true)
            Output.out((newlySet ? "stale flag set" : "stale flag was already set") + "; the daemon is fetching\n")
            return ExitCode.ok
        }
        do {
            let store = try StateStore.open(config: config)
            let newlySet = try store.markStale(reason: reason, at: .now())
            Output.out(newlySet ? "stale flag set\n" : "stale flag was already set\n")
        } catch {
            throw .failure("cannot mark stale: \(error)")
        }
        return ExitCode.ok
    }
}
