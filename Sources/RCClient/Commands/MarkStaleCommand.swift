import RCCore
import RCStore
import RCSystem

/// `rcagent mark-stale [--reason TEXT]`: sets the persistent stale flag. It asks the daemon when one
/// takes the request (the daemon persists the flag and fetches). Otherwise — no daemon, or one that
/// is busy, does not answer or may not be reached by this user — it writes the database itself, so
/// that the flag holds: the daemon sees it at its next fetch or start.
enum MarkStaleCommand {
    static let spec = CommandSpec(
        "mark-stale", summary: "Set the stale flag (works with the daemon down; the next fetch ignores the interval).",
        options: [.value("reason", "TEXT", "why (shown in status)")], run: run)

    /// How long the daemon may take to answer: it persists the flag (waiting at most SQLite's 5 s
    /// busy timeout) and only requests the fetch.
    static let timeout: Duration = .seconds(10)

    static func run(_ invocation: Invocation) throws(CLIError) -> Int32 {
        let config = try invocation.config()
        let reason = invocation.arguments.value("reason") ?? "rcagent mark-stale"
        let unreachable: String?
        let reply = ControlClient.ask(
            .markStale(reason: reason), expecting: MarkStaleResponse.self, socket: config.socket, timeout: timeout)
        switch reply {
        case let .answered(response):
            Output.out(
                (response.newlySet ? "stale flag set" : "stale flag was already set") + "; the daemon is fetching\n")
            return ExitCode.ok
        case let .refused(error):
            // The daemon considered the request and said no (permission-denied, storage, ...): not a
            // reason to go around it.
            throw .failure(error.message)
        case let .noAnswer(why):
            unreachable = why
        case let .denied(error):
            unreachable = "not allowed to talk to the daemon: \(error)"
        case .notRunning:
            unreachable = nil
        }
        let newlySet: Bool
        do {
            let store = try StateStore.open(config: config)
            // Readers the database is private to read the flag from the reader file.
            let reader = StateStore.readerPath(forDatabase: config.databasePath)
            store.maintainReaderFile(at: reader) { Output.err("Warning: cannot write \(reader): \($0)\n") }
            newlySet = try store.markStale(reason: reason, at: .now())
        } catch {
            guard let unreachable else { throw .failure("cannot mark stale: \(error)") }
            throw .unavailable(
                "cannot mark stale: the daemon did not take the request (\(unreachable)), "
                    + "and writing the database failed: \(error)")
        }
        let set = newlySet ? "stale flag set" : "stale flag was already set"
        if let unreachable {
            Output.out("\(set) in the database; the daemon did not take the request (\(unreachable))\n")
        } else {
            Output.out("\(set)\n")
        }
        return ExitCode.ok
    }
}
