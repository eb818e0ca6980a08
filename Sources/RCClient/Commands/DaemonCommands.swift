import RCCore

/// `rcagent fetch`: asks the daemon to fetch, optionally waiting for the outcome.
enum FetchCommand {
    static let spec = CommandSpec(
        "fetch", summary: "Ask the daemon to fetch (and activate, per the Activation policy).",
        options: [
            .flag("force", "ignore MinimumFetchInterval"),
            .flag("ignore-throttle", "fetch even while the server throttles this device"),
            .flag("wait", "return after the fetch and activation (exit 1 if it failed)"),
            .value("timeout", "D", "how long --wait waits (default: FetchTimeout + 10s)"),
            .flag("json", "print the daemon's response as JSON"),
        ], run: run)

    static func run(_ invocation: Invocation) throws(CLIError) -> Int32 {
        let arguments = invocation.arguments
        let wait = arguments.has("wait")
        let fetchTimeout = try invocation.config().fetchTimeout
        let timeout = try invocation.duration("timeout") ?? fetchTimeout + .seconds(10)
        let answer = try invocation.request(
            .fetch(force: arguments.has("force"), ignoreThrottle: arguments.has("ignore-throttle"), wait: wait),
            expecting: FetchResponse.self, timeout: wait ? timeout : .seconds(10))
        if invocation.json {
            Output.raw(answer.json.compactText + "\n")
            return ExitCode.ok
        }
        if case .requested = answer.response {
            Output.out(
                "\(describeRequest(force: arguments.has("force"), ignoreThrottle: arguments.has("ignore-throttle")))\n")
        } else if answer.response.fetchedNothingNew,
            let deferred = (try? invocation.values().store?.activationStatus())?.deferred
        {
            // The template was fetched before (a watched file is fetched as it is written) and still
            // waits: say so, or "no change" would hide why the old values are served.
            Output.out(
                "\(describeOutcome(answer.response)); deferred: \(deferred.text); rcagent activate --now overrides\n")
        } else {
            Output.out("\(describeOutcome(answer.response))\n")
        }
        return ExitCode.ok
    }

    /// What a fetch request without `--wait` leads to: the daemon decides after answering, so
    /// say what may still hold the fetch back and how to learn the outcome.
    static func describeRequest(force: Bool, ignoreThrottle: Bool) -> TerminalText {
        var holds: [String] = []
        if !force { holds.append("MinimumFetchInterval has not passed (--force)") }
        if !ignoreThrottle { holds.append("the server throttles this device (--ignore-throttle)") }
        let skip = holds.isEmpty ? "" : "; the daemon skips it if " + holds.joined(separator: " or ")
        return "fetch requested\(TerminalText(verbatim: skip)); --wait waits and prints the outcome"
    }

    /// One line for a fetch outcome as the daemon reports it (a deferral of an earlier fetch is
    /// added by ``run(_:)``, which reads it from the store).
    static func describeOutcome(_ response: FetchResponse) -> TerminalText {
        switch response {
        case let .updated(templateVersion, changedKeys, deferred):
            let version = templateVersion ?? "-"
            if changedKeys == nil, let deferred {
                return "fetched template \(version); deferred: \(deferred.text); rcagent activate --now overrides"
            }
            if let changedKeys, changedKeys.isEmpty {
                return "fetched and activated template \(version); no keys changed"
            }
            if let changedKeys {
                return "fetched and activated template \(version); changed keys: \(changedKeys.joined(separator: " "))"
            }
            return "fetched template \(version); not activated yet (rcagent activate)"
        case .noChange: return "no change"
        case let .skipped(reason, nextFetchAt):
            return "not fetched: \(reason)"
                + (nextFetchAt.map { "; next fetch at \($0)" } ?? TerminalText(verbatim: ""))
        case .requested: return "fetch requested"
        }
    }
}

/// `rcagent activate [--now]`: makes the fetched values active and prints the changed keys, one per
/// line; outside every maintenance window or under a hold, says the activation waits and until when.
enum ActivateCommand {
    static let spec = CommandSpec(
        "activate", summary: "Activate fetched values; print the changed keys.",
        options: [
            .flag("now", "activate even outside every Window= and under a hold"),
            .flag("json", "print the daemon's response as JSON"),
        ], run: run)

    static func run(_ invocation: Invocation) throws(CLIError) -> Int32 {
        let answer = try invocation.request(
            .activate(now: invocation.arguments.has("now")), expecting: ActivateResponse.self, timeout: .seconds(30))
        if invocation.json {
            Output.raw(answer.json.compactText + "\n")
        } else if case let .activated(_, changedKeys) = answer.response {
            Output.out(changedKeys.map { "\($0)\n" as TerminalText }.joined())
        } else if case let .deferred(deferred) = answer.response {
            Output.out("deferred: \(deferred.text); rcagent activate --now overrides\n")
        } else if case let .trialRunning(version, deadline) = answer.response {
            Output.err(
                "a trial is running: template \(version ?? "-") until \(deadline.iso8601) at the latest (its health check decides; activate after it)\n"
            )
        } else {
            Output.err("nothing to activate\n")
        }
        return ExitCode.ok
    }
}

/// `rcagent notify JSON`: delivers an FCM-style message to the daemon exactly as a push would.
enum NotifyCommand {
    static let spec = CommandSpec(
        "notify", arguments: ["JSON"],
        summary: "Deliver an FCM-style message ({\"data\":{...}} or {\"message\":{...}}), a live activity too.",
        options: [
            .flag("wait", "return after the fetch the message starts (exit 1 if it failed)"),
            .value("timeout", "D", "how long --wait waits (default: FetchTimeout + 10s)"),
            .flag("json", "print the daemon's response as JSON"),
        ], run: run)

    static func run(_ invocation: Invocation) throws(CLIError) -> Int32 {
        let text = invocation.arguments.positionals[0]
        let raw: JSONValue
        let message: PushMessage
        do {
            raw = try JSONValue.parse(text)
            message = try PushMessage.parse(raw)
        } catch let error as JSONParseError {
            throw .failure("the message is not JSON: \(error.reason)")
        } catch {
            throw .failure("\(error)")
        }
        let wait = invocation.arguments.has("wait")
        let fetchTimeout = try invocation.config().fetchTimeout
        let timeout = try invocation.duration("timeout") ?? fetchTimeout + .seconds(10)
        let answer = try invocation.request(
            .message(message, raw: raw, wait: wait), expecting: MessageResponse.self,
            timeout: wait ? timeout : .seconds(30))
        if invocation.json {
            Output.raw(answer.json.compactText + "\n")
            if wait, case .markedStale(_, .failure?) = answer.response.stale { return ExitCode.failure }
            return ExitCode.ok
        }
        if let activity = answer.response.activity { Output.out("\(ActivityCommand.describe(activity))\n") }
        switch answer.response.stale {
        case let .ignored(why):
            // A message that carried only an activity said all there is to say above.
            if answer.response.activity == nil || message.marksStale { Output.out("ignored: \(why)\n") }
        case .markedStale(_, fetch: nil):
            Output.out("config marked stale; the daemon is fetching\n")
        case let .markedStale(_, fetch: .success(outcome)?):
            Output.out("config marked stale; \(FetchCommand.describeOutcome(outcome))\n")
        case let .markedStale(_, fetch: .failure(error)?):
            throw .failure("config marked stale; \(error.message)")
        }
        return ExitCode.ok
    }
}

/// `rcagent watch`: streams the daemon's events, one per line, until interrupted.
enum WatchCommand {
    static let spec = CommandSpec(
        "watch", summary: "Stream events (fetched, activated, stale-set, activity-updated, ...) one per line.",
        options: [.flag("json", "one JSON object per event")], run: run)

    static func run(_ invocation: Invocation) throws(CLIError) -> Int32 {
        // The connection closes when `client` goes out of scope (ControlClient owns it).
        var client = try invocation.daemon()
        _ = try Invocation.decode(try client.send(ControlRequest.watch.json), as: WatchAck.self)
        while let line = try client.readLine() {
            if invocation.json {
                Output.raw(String(decoding: line, as: UTF8.self) + "\n")
            } else if let json = try? JSONValue.parse(line), let event = try? WatchEvent.parse(json) {
                Output.out("\(describe(event))\n")
            }
        }
        throw .unavailable("the daemon closed the event stream")
    }

    /// `2026-11-29T13:47:17Z activated template 7: kiosk_url welcome_message`.
    static func describe(_ event: WatchEvent) -> TerminalText {
        // An activity's fields are whole JSON documents: the activity's own line reads better.
        if event.kind.hasPrefix(AgentEventKind.activityPrefix) { return ActivityCommand.describe(event) }
        var details = event.fields.map { member -> TerminalText in
            if case let .array(items) = member.value {
                return "\(member.key)=\(items.map { $0.stringValue ?? $0.compactText }.joined(separator: ","))"
            }
            return "\(member.key)=\(member.value.stringValue ?? member.value.compactText)"
        }
        details.insert("\(event.kind)", at: 0)
        return "\(event.at) " + details.joined(separator: " ")
    }
}

extension Invocation {
    /// A duration option (`--timeout 30s`), or nil when not given.
    func duration(_ name: String) throws(CLIError) -> Duration? {
        guard let text = arguments.value(name) else { return nil }
        guard let duration = DurationText.parse(text) else {
            throw .usage("--\(name) must be a duration like 30s or 2min, got '\(text)'", command: command)
        }
        return duration
    }
}

/// `rcagent reload`: asks the daemon to re-read agent.conf, its drop-ins and the defaults file.
/// Prints what changed; a config that does not load is printed with its file:line (exit 1) and
/// the daemon keeps the config it runs with.
enum ReloadCommand {
    static let spec = CommandSpec(
        "reload", summary: "Re-read agent.conf, its drop-ins and the defaults; print what changed.",
        options: [.flag("json", "print the daemon's response as JSON")], run: run)

    static func run(_ invocation: Invocation) throws(CLIError) -> Int32 {
        // A reload stops and starts services (an MQTT client waits up to 3 s for its thread).
        let answer = try invocation.request(.reload, expecting: ReloadResponse.self, timeout: .seconds(30))
        if invocation.json {
            Output.raw(answer.json.compactText + "\n")
            return ExitCode.ok
        }
        let reload = answer.response
        for warning in reload.warnings { Output.err("warning: \(warning)\n") }
        Output.out(
            reload.changed.isEmpty
                ? "reloaded: nothing changed\n"
                : "reloaded: \(reload.changed.joined(separator: ", ")) changed\n")
        for setting in reload.restartNeeded {
            Output.out("\(setting) applies when the daemon is restarted (systemctl restart rcagentd)\n")
        }
        return ExitCode.ok
    }
}

extension FetchResponse {
    /// No new template came with this answer: "no change", or not fetched at all.
    var fetchedNothingNew: Bool {
        switch self {
        case .noChange, .skipped: true
        case .requested, .updated: false
        }
    }
}
