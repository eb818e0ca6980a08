@preconcurrency import Dispatch
import Glibc
import RCCore
import RCService
import RCSystem
import Synchronization

/// `rcadmin fleet status`: the fleet as its agents report it (`[Report] MQTTStatusTopic=`), read
/// from the broker's retained reports. Wires the options to ``ReportCollector`` (MQTT),
/// ``FleetSummary`` (the counting) and ``FleetStatusOutput`` (the printing).
enum FleetStatusCommand {
    static let defaultTopic = "rcagent/status"
    static let defaultLimit = 20
    static let defaultTimeout: Duration = .seconds(5)
    static let defaultWatchTimeout: Duration = .seconds(30)
    /// Devices (topics) kept at most unless `--max-devices` says otherwise: about 1.8 KiB a
    /// device was measured (100,000 agents' reports, 177 MiB), a few KiB more for a report whose
    /// texts are all at their limit, so this bounds memory to a few hundred MiB.
    static let defaultCapacity = 200_000

    static let command = AdminCommand(
        words: ["fleet", "status"],
        synopsis: """
            [--mqtt URL] [--topic TOPIC] [--json] [--watch] [--all | --limit N]
                                   [--timeout DURATION] [--max-devices N]
                                   \(MQTTLogin.synopsis)
            """,
        help: """
            Shows the fleet as its agents report it: every agent with [Report] MQTTStatusTopic=TOPIC
            keeps a retained report on TOPIC/DEVICEID. Subscribes to TOPIC/+ (default rcagent/status)
            at URL (default mqtt://localhost) and prints the devices (online, offline), the devices
            per template version (newest first), the newest version, and how many are stale, have
            failing fetches, have a required or recommended update pending, cannot tell their update
            state, or lag behind the newest version; then the device ids of each (the first 20 of
            each; --limit N or --all). Reports that cannot be read, or that name another device than
            their topic does, are listed as unreadable. --json prints one document with full lists
            and the reports. --watch keeps following until SIGINT or SIGTERM: on a terminal, one
            progress line redrawn in place (devices on the newest version of those online, rolled
            back, stale, offline); otherwise a line whenever the picture changes (at most one a
            second; JSON lines with --json).
            The retained set is complete when the command's own marker message, published after
            subscribing, comes back, or after 2 s without a message; --timeout (default 5s, 30s with
            --watch) bounds that and, in a watch, how long a lost connection may take to come back.
            Exit status 1 when the broker cannot be reached or the reports were still arriving at
            the timeout.
            """,
        options: [
            .value("mqtt", "URL"), .value("topic", "TOPIC"), .flag("json"), .flag("watch"), .flag("all"),
            .value("limit", "N"), .value("timeout", "DURATION"), .value("max-devices", "N"),
        ] + MQTTLogin.options,
        arguments: 0...0
    ) { options, _ throws(AdminFailure) in
        let settings = try settings(options)
        let limit = try listLimit(options)
        let collector = try ReportCollector(settings)
        if options.flag("watch") {
            try await watch(collector, json: options.flag("json"))
        } else {
            try await status(collector, topic: settings.topic, json: options.flag("json"), limit: limit)
        }
    }

    /// The broker, topic and bounds from the command line, checked (shared with `fleet exporter`,
    /// whose `defaultTimeout` is the watch's).
    static func settings(_ options: ParsedOptions, defaultTimeout: Duration? = nil) throws(AdminFailure)
        -> ReportCollector.Settings
    {
        let topic = options.value("topic") ?? defaultTopic
        guard !topic.isEmpty, !topic.contains("+"), !topic.contains("#"), !topic.hasSuffix("/") else {
            throw .usage(
                "--topic must be a topic without the MQTT wildcards + and # and without a trailing /, got '"
                    + TextEscaping.terminal(topic) + "'")
        }
        var timeout = defaultTimeout ?? (options.flag("watch") ? defaultWatchTimeout : Self.defaultTimeout)
        if let text = options.value("timeout") {
            guard let duration = DurationText.parse(text), duration > .zero else {
                throw .usage("--timeout must be a duration such as 10s or 1min, got '\(TextEscaping.terminal(text))'")
            }
            timeout = duration
        }
        let capacity = try options.integer("max-devices", in: 1...100_000_000).map(Int.init) ?? defaultCapacity
        return ReportCollector.Settings(
            url: options.value("mqtt") ?? "mqtt://localhost", topic: topic, login: try MQTTLogin(options),
            timeout: timeout, capacity: capacity)
    }

    /// How many ids each list shows: `--limit N`, all with `--all`, else ``defaultLimit``.
    static func listLimit(_ options: ParsedOptions) throws(AdminFailure) -> Int? {
        let limit = try options.integer("limit", in: 0...Int64(Int32.max)).map(Int.init)
        if options.flag("all") {
            guard limit == nil else { throw .usage("--all and --limit N exclude each other") }
            return nil
        }
        return limit ?? defaultLimit
    }

    /// Collects once, prints the summary; an incomplete picture is printed, then reported as a failure.
    static func status(_ collector: ReportCollector, topic: String, json: Bool, limit: Int?) async throws(AdminFailure)
    {
        let collection = try await DetachedThread.run(noThread: .failure("cannot start a thread")) {
            () throws(AdminFailure) in try collector.collect()
        }
        let summary = collection.inbox.summary
        if json {
            Output.json(FleetStatusOutput.json(summary, topic: topic, complete: collection.complete, at: .now()))
        } else {
            Output.data(FleetStatusOutput.text(summary, topic: topic, limit: limit, complete: collection.complete))
        }
        if collection.inbox.overflow > 0 {
            Output.note(
                "Note: reports on more than \(collection.inbox.capacity) topics; the others are not counted "
                    + "(--max-devices N)")
        }
        if !collection.complete {
            throw .failure(
                "reports were still arriving when the time was up: the picture above is incomplete (--timeout)")
        }
    }

    /// Follows the reports until SIGINT or SIGTERM, one line per change of the picture.
    static func watch(_ collector: ReportCollector, json: Bool) async throws(AdminFailure) {
        let stop = StopSignal()
        // Through the one lifecycle: a signal from here on stops the watch, however early.
        let lifecycle: Lifecycle
        do { lifecycle = try Lifecycle(signals: [SIGINT, SIGTERM]) } catch {
            throw .failure("cannot catch signals: \(error)")
        }
        let signalled = Task {
            if await lifecycle.nextSignal() != nil { stop.set() }
        }
        // Nobody reads any more (`--watch | head -3`): done. SIGPIPE is ignored and a fleet at
        // rest prints nothing, so neither a failed write nor a signal would end the watch.
        let readerCheck = DispatchSource.makeTimerSource(queue: .global())
        readerCheck.schedule(deadline: .now() + .seconds(1), repeating: .seconds(1))
        readerCheck.setEventHandler { if readerIsGone() { stop.set() } }
        readerCheck.resume()
        defer {
            readerCheck.cancel()
            signalled.cancel()
        }
        // On a terminal, one progress line redrawn in place (at most once a second, as the
        // watch calls back); to a file or pipe, a line per change, for whatever reads them.
        let terminal = !json && isatty(1) == 1
        let drawn = Mutex(false)
        defer {
            // The shell's prompt after the progress line, not on it.
            if drawn.withLock({ $0 }) { Output.data("\n") }
        }
        try await DetachedThread.run(noThread: .failure("cannot start a thread")) { () throws(AdminFailure) in
            var last = ""
            var overflowNoted = false
            try collector.watch(stop: stop) { inbox in
                if inbox.overflow > 0 && !overflowNoted {
                    overflowNoted = true
                    Output.note("Note: reports on more than \(inbox.capacity) topics are not counted (--max-devices N)")
                }
                let summary = inbox.summary
                let now = Timestamp.now()
                // Printed only when the picture differs, not when reports merely repeat it.
                let picture =
                    json
                    ? JSONValue.object(FleetStatusOutput.counts(summary)).compactText
                    : terminal ? FleetStatusOutput.progressLine(summary) : FleetStatusOutput.watchLine(summary)
                guard picture != last else { return }
                last = picture
                if json {
                    Output.json(FleetStatusOutput.watchJSON(summary, at: now))
                } else if terminal {
                    // The time and a space take 9 columns; the last column stays free (no wrap).
                    let width = terminalColumns().map { max(0, $0 - 10) }
                    Output.data(
                        FleetStatusOutput.redraw + FleetStatusOutput.clock(now) + " "
                            + FleetStatusOutput.progressLine(summary, width: width))
                    drawn.withLock { $0 = true }
                } else {
                    Output.data(FleetStatusOutput.clock(now) + " " + picture + "\n")
                }
            }
        }
    }

    /// The terminal's width on stdout, when it says.
    static func terminalColumns() -> Int? {
        var size = winsize()
        guard ioctl(1, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return nil }
        return Int(size.ws_col)
    }

    /// Whether stdout is a pipe or socket whose reader has closed it.
    static func readerIsGone() -> Bool {
        var descriptor = pollfd(fd: 1, events: Int16(POLLOUT), revents: 0)
        return poll(&descriptor, 1, 0) == 1 && descriptor.revents & Int16(POLLERR | POLLHUP) != 0
    }
}
