import RCCore
import RCStore
import RCSystem

/// `rcagent history [--json]`: the kept activated snapshots, newest first, with their outcome, the
/// rejected versions and, when `[Activation] Window=` is set, whether a window is open now and when
/// the next one opens. Reads the store only (the daemon may be down).
enum HistoryCommand {
    static let spec = CommandSpec(
        "history", summary: "Show the kept activated snapshots and their outcome, newest first.",
        options: [.flag("json", "print JSON")], run: run)

    static func run(_ invocation: Invocation) throws(CLIError) -> Int32 {
        let config = try invocation.config()
        var entries: [HistoryEntry] = []
        var rejected: [RejectedVersion] = []
        do {
            if let store = try StoreFiles.open(config, warn: { Output.err($0) }) {
                entries = try store.history()
                rejected = try store.rejectedVersions()
            }
        } catch {
            throw .failure("cannot read the history: \(error)")
        }
        if invocation.json {
            let items = entries.map { entry in
                JSONValue.object([
                    ("templateVersion", entry.templateVersion.map(JSONValue.string) ?? .null),
                    ("activatedAt", .string(entry.activatedAt.iso8601)),
                    ("source", .string(entry.source)),
                    ("changedKeys", .integer(Int64(entry.changedKeys))),
                    ("outcome", .string(entry.outcome.description)),
                ])
            }
            Output.raw(JSONValue.array(items).compactText + "\n")
            return ExitCode.ok
        }
        if entries.isEmpty { Output.out("no activations recorded\n") }
        for entry in entries {
            let version = entry.templateVersion ?? "(none)"
            Output.out(
                "\(version)  \(entry.activatedAt.iso8601)  \(entry.source)  \(String(entry.changedKeys)) changed  "
                    + "\(entry.outcome.description)\n")
        }
        if !rejected.isEmpty {
            Output.out("rejected: \(rejected.map(\.templateVersion).joined(separator: ", "))\n")
        }
        let schedule = config.activationSettings.windows
        if !schedule.isUnrestricted {
            let now = Timestamp.now()
            let windows = schedule.windows.map(\.text).joined(separator: "; ")
            if schedule.isOpen(at: now) {
                Output.out("window: open now (\(windows))\n")
            } else if let next = schedule.nextOpening(after: now) {
                Output.out("window: closed; the next opens at \(next.iso8601) (\(windows))\n")
            } else {
                Output.out("window: closed; none opens (\(windows))\n")
            }
        }
        return ExitCode.ok
    }
}
