import RCCore
import RCStore
import RCSystem

/// `rcagent activity list|show ID|watch|remove ID [--json]`: the Live Activities the daemon keeps.
/// `list` and `show` read the reader file (or the state database) directly, like `get` (they answer
/// with the daemon down); `watch` follows the daemon's event stream and prints only the `activity-*`
/// events, which is what a kiosk renderer reads (`--json`: one JSON object per line, exactly as the
/// daemon sent it); `remove` asks the daemon to remove one at once (state-changing: root, the
/// daemon's user or `SocketGroup`).
enum ActivityCommand {
    static let spec = CommandSpec(
        "activity", arguments: ["list|show|watch|remove", "ID"], optionalArguments: 1,
        summary: "Live activities: list them, show one, watch their events, or remove one.",
        options: [
            .flag("json", "JSON: the list as an array, one activity, one event object per line, or the daemon's answer")
        ],
        run: run)

    /// The subcommand is the first argument (the option parser knows one argument list per
    /// command), so each checks its own count here: `show` and `remove` need the ID, the others take none.
    static func run(_ invocation: Invocation) throws(CLIError) -> Int32 {
        let positionals = invocation.arguments.positionals
        let command = positionals[0]
        let takesID: Bool
        switch command {
        case "list", "watch": takesID = false
        case "show", "remove": takesID = true
        default: throw .usage("unknown activity command '\(command)' (list, show, watch or remove)", command: spec)
        }
        if takesID, positionals.count != 2 { throw .usage("\(command) needs the activity's ID", command: spec) }
        if !takesID, positionals.count != 1 { throw .usage("unexpected argument '\(positionals[1])'", command: spec) }
        switch command {
        case "list": return try list(invocation)
        case "show": return try show(invocation, id: positionals[1])
        case "watch": return try watch(invocation)
        default: return try remove(invocation, id: positionals[1])
        }
    }

    private static func list(_ invocation: Invocation) throws(CLIError) -> Int32 {
        // No database yet (the daemon never ran): no activities, which is no error.
        let activities =
            try read(invocation) { (store, now) throws(StoreError) -> [LiveActivity]? in
                try store.activities(now: now)
            } ?? []
        if invocation.json {
            Output.raw(JSONValue.array(activities.map(\.json)).compactText + "\n")
        } else {
            Output.out(activities.map { "\(describe($0.json))\n" as TerminalText }.joined())
        }
        return ExitCode.ok
    }

    private static func show(_ invocation: Invocation, id: String) throws(CLIError) -> Int32 {
        let activity = try read(invocation) { (store, now) throws(StoreError) in try store.activity(id: id, now: now) }
        // The message is escaped once, where every CLI error is printed (CommandLineTool.report).
        guard let activity else { throw .failure("no activity '\(id)'") }
        if invocation.json {
            Output.raw(activity.json.compactText + "\n")
        } else {
            Output.out("\(describe(activity.json))\n")
        }
        return ExitCode.ok
    }

    /// Asks the daemon to remove the activity: exit 1 when there is none (or the daemon refuses this
    /// user), 69 when the daemon does not run.
    private static func remove(_ invocation: Invocation, id: String) throws(CLIError) -> Int32 {
        let answer = try invocation.request(
            .removeActivity(id: id), expecting: RemoveActivityResponse.self, timeout: .seconds(10))
        if invocation.json {
            Output.raw(answer.json.compactText + "\n")
        } else {
            Output.out("activity \(answer.response.id) removed\n")
        }
        return ExitCode.ok
    }

    /// Runs `body` on the state database as the CLI reads it; no database yet has no activities.
    /// The state is computed at the CLI's clock (`stale` follows from it), like the daemon's lists.
    /// A database that cannot be read is exit 1: unlike values, activities have no defaults file to
    /// fall back to.
    private static func read<T>(
        _ invocation: Invocation, _ body: (StateStore, Timestamp) throws(StoreError) -> T?
    ) throws(CLIError) -> T? {
        let config = try invocation.config()
        do {
            guard let store = try StoreFiles.open(config, warn: { Output.err($0) }) else { return nil }
            return try body(store, .now())
        } catch {
            throw .failure("cannot read \(config.databasePath): \(error)")
        }
    }

    /// Follows the daemon's events and prints the activity ones until the stream ends.
    private static func watch(_ invocation: Invocation) throws(CLIError) -> Int32 {
        var client = try invocation.daemon()
        _ = try Invocation.decode(try client.send(ControlRequest.watch.json), as: WatchAck.self)
        while let line = try client.readLine() {
            // Lines of other events, and any a newer daemon writes that this CLI cannot read, are skipped:
            // a renderer following --json must only ever see activity events.
            guard let json = try? JSONValue.parse(line), let event = try? WatchEvent.parse(json),
                event.kind.hasPrefix(AgentEventKind.activityPrefix)
            else { continue }
            if invocation.json {
                // As the daemon sent it: compact JSON, one line (its escapes keep it one line).
                Output.raw(String(decoding: line, as: UTF8.self) + "\n")
            } else {
                Output.out("\(describe(event))\n")
            }
        }
        // A renderer's supervisor restarts it: the exit status says the daemon went away.
        throw .unavailable("the daemon closed the event stream")
    }

    /// `2026-11-30T18:00:00Z activity-updated order-42 active Delivery {"eta":5} alert="Order 42: Soon"`;
    /// a removal: `... activity-removed order-42 (dismissed)`.
    static func describe(_ event: WatchEvent) -> TerminalText {
        let fields = JSONValue.object(event.fields)
        if let removed = fields["activity"] {
            let reason = fields["reason"]?.stringValue.map { " (\($0))" as TerminalText } ?? ""
            let id = fields["id"]?.stringValue ?? removed["id"]?.stringValue ?? "-"
            return "\(event.at) \(event.kind) \(id)\(reason)"
        }
        return "\(event.at) \(event.kind) \(describe(fields))"
    }

    /// What a `message` answer says the activity became: `started: order-42 active Delivery {...}`.
    static func describe(_ result: ActivityResult) -> TerminalText {
        switch result.outcome {
        case .ignored:
            return "activity \(result.id) ignored: \(result.reason ?? "-")"
        case .removed:
            return "activity \(result.id) removed (its dismissal date has passed)"
        case .started, .updated, .ended:
            return "activity \(result.outcome.rawValue): \(result.activity.map(describe) ?? "\(result.id)")"
        }
    }

    /// One line for an activity (its list-item JSON): id, state, attributes type, the content state
    /// compact, the alert; an ended one says when it goes. Every value is escaped for the terminal.
    static func describe(_ activity: JSONValue) -> TerminalText {
        func text(_ key: String) -> String { activity[key]?.stringValue ?? "-" }
        var line: TerminalText =
            "\(text("id")) \(text("state")) \(text("attributesType")) \(activity["contentState"]?.compactText ?? "{}")"
        if let alert = activity["alert"], let title = alert["title"]?.stringValue {
            line = line + " alert=\"\(title): \(alert["body"]?.stringValue ?? "")\""
        }
        if let dismissAt = activity["dismissAt"]?.stringValue { line = line + " dismiss-at=\(dismissAt)" }
        return line
    }
}
