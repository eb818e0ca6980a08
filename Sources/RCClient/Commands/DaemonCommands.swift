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
        let response = try invocation.request(
            .fetch(force: arguments.has("force"), ignoreThrottle: arguments.has("ignore-throttle"), wait: wait),
            timeout: wait ? timeout : .seconds(10))
        if invocation.json {
            Output.raw(response.compactText + "\n")
            return ExitCode.ok
        }
        Output.out("\(describeOutcome(response))\n")
        return ExitCode.ok
    }

    /// One line for a fetch outcome as the daemon reports it.
    static func describeOutcome(_ response: JSONValue) -> TerminalText {
        switch response["outcome"]?.stringValue {
        case "updated":
            let version = response["templateVersion"]?.stringValue ?? "-"
            if case let .array(keys)? = response["changedKeys"] {
                return
                    "fetched and activated template \(version); changed keys: \(keys.compactMap(\.stringValue).joined(separator: " "))"
            }
            return "fetched template \(version); not activated yet (rcagent activate)"
        case "no-change": return "no change"
        case "skipped":
            return "not fetched: \(response["reason"]?.stringValue ?? "not due")"
                + (response["nextFetchAt"]?.stringValue.map { "; next fetch at \($0)" } ?? TerminalText(verbatim: ""))
        default: return "fetch requested"
        }
    }
}

/// `rcagent activate`: makes the fetched values active and prints the changed keys, one per line.
enum ActivateCommand {
    static let spec = CommandSpec(
        "activate", summary: "Activate fetched values; print the changed keys.",
        options: [.flag("json", "print the daemon's response as JSON")], run: run)

    static func run(_ invocation: Invocation) throws(CLIError) -> Int32 {
        let response = try invocation.request(.activate, timeout: .seconds(30))
        if invocation.json {
            Output.raw(response.compactText + "\n")
        } else if case .bool(true) = response["activated"], case let .array(keys)? = response["changedKeys"] {
            Output.out(keys.compactMap { $0.stringValue.map { "\($0)\n" as TerminalText } }.joined())
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
        summary: "Deliver an FCM-style message ({\"data\":{...}} or {\"message\":{...}}).",
        options: [
            .flag("wait", "return after the fetch the message starts (exit 1 if it failed)"),
            .value("timeout", "D", "how long --wait waits (default: FetchTimeout + 10s)"),
            .flag("json", "print the daemon's response as JSON"),
        ], run: run)

    static func run(_ invocation: Invocation) throws(CLIError) -> Int32 {
        let text = invocation.arguments.positionals[0]
        let raw: JSONValue
        do {
            raw = try JSONValue.parse(text)
            _ = try PushMessage.parse(raw)
        } catch let error as JSONParseError {
            throw .failure("the message is not JSON: \(error.reason)")
        } catch {
            throw .failure("\(error)")
        }
        let wait = invocation.arguments.has("wait")
        let fetchTimeout = try invocation.config().fetchTimeout
        let timeout = try invocation.duration("timeout") ?? fetchTimeout + .seconds(10)
        let request = JSONValue.object([("op", .string("message")), ("message", raw), ("wait", .bool(wait))])
        let response = try invocation.send(request, timeout: wait ? timeout : .seconds(30))
        if invocation.json {
            Output.raw(response.compactText + "\n")
        } else if let ignored = response["ignored"]?.stringValue {
            Output.out("ignored: \(ignored)\n")
        } else if let fetch = response["fetch"] {
            guard case .bool(true) = fetch["ok"] else {
                throw .failure(
                    "config marked stale; " + (fetch["error"]?["message"]?.stringValue ?? "the fetch failed"))
            }
            Output.out("config marked stale; \(FetchCommand.describeOutcome(fetch))\n")
        } else {
            Output.out("config marked stale; the daemon is fetching\n")
        }
        if wait, case .bool(false)? = response["fetch"]?["ok"] { return ExitCode.failure }
        return ExitCode.ok
    }
}

/// `rcagent watch`: streams the daemon's events, one per line, until interrupted.
enum WatchCommand {
    static let spec = CommandSpec(
        "watch", summary: "Stream events (fetched, activated, stale-set, ...) one per line.",
        options: [.flag("json", "one JSON object per event")], run: run)

    static func run(_ invocation: Invocation) throws(CLIError) -> Int32 {
        var client = try invocation.daemon()
        defer { client.close() }
        let response = try client.send(ControlRequest.watch.json)
        guard case .bool(true) = response["ok"] else {
            throw .failure(response["error"]?["message"]?.stringValue ?? "watch refused")
        }
        while let line = try client.readLine() {
            if invocation.json {
                Output.raw(String(decoding: line, as: UTF8.self) + "\n")
            } else if let event = try? JSONValue.parse(line) {
                Output.out("\(describe(event))\n")
            }
        }
        throw .unavailable("the daemon closed the event stream")
    }

    /// `2026-11-29T13:47:17Z activated template 7: kiosk_url welcome_message`.
    static func describe(_ event: JSONValue) -> TerminalText {
        let at = event["at"]?.stringValue ?? "-"
        let kind = event["event"]?.stringValue ?? "?"
        var details = (event.objectMembers ?? []).filter { $0.key != "at" && $0.key != "event" }.map {
            member -> TerminalText in
            if case let .array(items) = member.value {
                return "\(member.key)=\(items.map { $0.stringValue ?? $0.compactText }.joined(separator: ","))"
            }
            return "\(member.key)=\(member.value.stringValue ?? member.value.compactText)"
        }
        details.insert("\(kind)", at: 0)
        return "\(at) " + details.joined(separator: " ")
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
