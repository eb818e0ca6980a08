import RCCore
import RCStore
import RCSystem

/// `rcagent status [--json]`: the cache's view, plus whether the daemon answers on its socket.
enum StatusCommand {
    static let spec = CommandSpec(
        "status", summary: "Show source, device id, snapshots, last fetch, stale flag and daemon state.",
        options: [.flag("json", "print the status as one JSON document")], run: run)

    static func run(_ invocation: Invocation) throws(CLIError) -> Int32 {
        let config = try invocation.config()
        let reader = try invocation.values()
        var status: StoreStatus?
        var recovery: StoredEvent?
        var activation = ActivationStatus()
        var storeProblem = reader.storeProblem
        if let store = reader.store {
            do {
                status = try store.status()
                recovery = try store.lastEvent(.databaseRecovered)
                activation = (try? store.activationStatus()) ?? ActivationStatus()
            } catch {
                // Damage the value probe did not reach: reported like a database that does not open.
                status = nil
                recovery = nil
                storeProblem = error.description
            }
        }
        var counts = ActivityCounts()
        if let store = reader.store, status != nil {
            // Read apart from the config's state: one damaged activity row must not hide the rest.
            do { counts = ActivityCounts(try store.activities(now: .now())) } catch {
                counts.problem = error.description
            }
        }
        // The daemon's own view (pid, whether it is fetching, its next fetch) when it runs. A daemon
        // that does not answer (busy, too slow, refusing this user) still runs: only "nothing
        // listens" is "not running".
        let daemon: DaemonView?
        switch ControlClient.ask(.status, expecting: StatusResponse.self, socket: config.socket, timeout: .seconds(5)) {
        case let .answered(response):
            daemon = .answered(response)
        case let .noAnswer(why):
            daemon = .note("running, but not answering: \(why)")
        case let .refused(error):
            daemon = .note("running, but not answering: \(error.message)")
        case let .denied(error):
            daemon = .note("running, but not reachable by this user: \(error)")
        case .notRunning:
            daemon = nil
        }
        let now = Timestamp.now()
        if invocation.json {
            Output.raw(
                json(
                    status, recovery: recovery, config: config, daemon: daemon, storeProblem: storeProblem,
                    activities: counts, activation: activation
                ).compactText + "\n")
        } else {
            Output.out(
                text(
                    status, recovery: recovery, config: config, daemon: daemon, storeProblem: storeProblem,
                    activities: counts, activation: activation, now: now))
        }
        return ExitCode.ok
    }

    /// A running daemon's answer to `status`, or why there is none.
    enum DaemonView {
        case answered(StatusResponse)
        case note(String)

        var status: StatusResponse? { if case let .answered(status) = self { status } else { nil } }
        var note: String? { if case let .note(note) = self { note } else { nil } }
    }

    /// How many Live Activities the database holds, by state.
    struct ActivityCounts {
        var total = 0
        var active = 0
        var stale = 0
        var ended = 0
        /// Why the activities could not be read (the counts are then 0).
        var problem: String?

        init(_ activities: [LiveActivity] = []) {
            total = activities.count
            for activity in activities {
                switch activity.state {
                case .active: active += 1
                case .stale: stale += 1
                case .ended: ended += 1
                }
            }
        }

        var json: JSONValue {
            .object([
                ("count", .integer(Int64(total))), ("active", .integer(Int64(active))),
                ("stale", .integer(Int64(stale))), ("ended", .integer(Int64(ended))),
                ("problem", problem.map(JSONValue.string) ?? .null),
            ])
        }

        /// `2 (1 active, 1 ended)`, or `none`.
        var text: String {
            if let problem { return "unreadable: \(problem)" }
            guard total > 0 else { return "none" }
            let parts = [(active, "active"), (stale, "stale"), (ended, "ended")].filter { $0.0 > 0 }
            return "\(total) (" + parts.map { "\($0.0) \($0.1)" }.joined(separator: ", ") + ")"
        }
    }

    static func json(
        _ status: StoreStatus?, recovery: StoredEvent?, config: AgentConfig, daemon: DaemonView?, storeProblem: String?,
        activities: ActivityCounts = ActivityCounts(), activation: ActivationStatus = ActivationStatus()
    ) -> JSONValue {
        func time(_ t: Timestamp?) -> JSONValue { t.map { .string($0.iso8601) } ?? .null }
        func string(_ s: String?) -> JSONValue { s.map(JSONValue.string) ?? .null }
        let stale = status?.stale ?? .clear
        let recovered: JSONValue =
            recovery.map { .object([("at", time($0.at)), ("movedTo", $0.detail["movedTo"] ?? .null)]) } ?? .null
        return .object([
            (
                "daemon",
                .object([
                    ("running", .bool(daemon != nil)), ("socket", .string(config.socket)),
                    ("pid", daemon?.status.map { .integer($0.pid) } ?? .null),
                    ("state", string(daemon?.status?.state)), ("note", string(daemon?.note)),
                    ("push", string(daemon?.status?.push)),
                    ("report", string(daemon?.status?.report)),
                ])
            ),
            ("source", .object([("type", .string(config.sourceType.rawValue))])),
            ("deviceId", string(status?.deviceId)),
            (
                "database",
                .object([
                    ("path", .string(config.databasePath)), ("problem", storeProblem.map(JSONValue.string) ?? .null),
                    ("recovered", recovered),
                ])
            ),
            (
                "stale",
                .object([("set", .bool(stale.isSet)), ("reason", string(stale.reason)), ("since", time(stale.since))])
            ),
            (
                "active",
                .object([
                    ("templateVersion", string(status?.active.templateVersion)),
                    ("activatedAt", time(status?.active.at)),
                    ("keys", .integer(Int64(status?.active.keys ?? 0))),
                ])
            ),
            (
                "fetched",
                .object([
                    ("templateVersion", string(status?.fetched.templateVersion)),
                    ("fetchedAt", time(status?.fetched.at)),
                    ("pending", .bool(status?.pending ?? false)),
                ])
            ),
            (
                "lastFetch",
                .object([
                    ("attemptAt", time(status?.lastAttempt)), ("successAt", time(status?.lastSuccess)),
                    ("status", string(status?.lastStatus?.rawValue)), ("error", string(status?.lastError)),
                ])
            ),
            ("throttledUntil", time(status?.throttledUntil)),
            ("nextFetchAt", daemon?.status.map { string($0.nextFetchAt) } ?? time(status?.nextFetchAt)),
            ("backoffStep", .integer(Int64(status?.backoffStep ?? 0))),
            ("activities", activities.json),
            ("activation", activation.json),
            ("signature", SignedDocumentStatus.json(config)),
        ])
    }

    /// Every value that came from outside (stale reason, errors, template versions, the daemon's
    /// answers) is interpolated into ``TerminalText`` and so escaped: one field cannot make two lines.
    static func text(
        _ status: StoreStatus?, recovery: StoredEvent?, config: AgentConfig, daemon: DaemonView?, storeProblem: String?,
        activities: ActivityCounts = ActivityCounts(), activation: ActivationStatus = ActivationStatus(), now: Timestamp
    ) -> TerminalText {
        func time(_ t: Timestamp?) -> String { t.map { "\($0.iso8601) (\(age(now - $0)))" } ?? "never" }
        let running = daemon.map { d -> TerminalText in
            switch d {
            case let .note(note): "\(note)"
            case let .answered(answer): "running, pid \(answer.pid), \(answer.state) (\(config.socket))"
            }
        }
        var lines: [TerminalText] = ["daemon:       \(running ?? "not running (\(config.socket))")"]
        lines.append("source:       \(describeSource(config))")
        if let push = daemon?.status?.push { lines.append("push:         \(push)") }
        if let report = daemon?.status?.report { lines.append("report:       \(report)") }
        guard let status else {
            let state = storeProblem.map { "unreadable: \($0)" } ?? "none yet"
            lines.append("database:     \(state) (\(config.databasePath)); values come from \(config.defaults)")
            return lines.joined(separator: "\n") + "\n"
        }
        lines.append("device id:    \(status.deviceId ?? "-")")
        if let recovery {
            let movedTo = recovery.detail["movedTo"]?.stringValue ?? "-"
            lines.append("recovered:    \(time(recovery.at)): the database was corrupt and was moved to \(movedTo)")
        }
        if status.stale.isSet {
            let reason = status.stale.reason.map { ": \($0)" } ?? ""
            lines.append("stale:        yes, since \(time(status.stale.since))\(reason)")
        } else {
            lines.append("stale:        no")
        }
        lines.append(
            "active:       template \(status.active.templateVersion ?? "-"), \(status.active.keys) keys, activated \(time(status.active.at))"
        )
        lines.append(
            "fetched:      template \(status.fetched.templateVersion ?? "-"), fetched \(time(status.fetched.at))"
                + (status.pending ? ", not yet activated" : ""))
        if let deferred = activation.deferred { lines.append("deferred:     \(deferred.text)") }
        lines.append(
            "last fetch:   \(status.lastStatus?.rawValue ?? "none"), attempted \(time(status.lastAttempt)), succeeded \(time(status.lastSuccess))"
        )
        if let error = status.lastError { lines.append("last error:   \(error)") }
        if let signed = SignedDocumentStatus.read(config) { lines.append("signature:    \(signed.text(now: now))") }
        if let until = status.throttledUntil, until > now { lines.append("throttled:    until \(until.iso8601)") }
        if let next = daemon?.status?.nextFetchAt ?? status.nextFetchAt?.iso8601 {
            lines.append("next fetch:   \(next)")
        }
        for line in activation.textLines { lines.append("\(line)") }
        lines.append("activities:   \(activities.text)")
        return lines.joined(separator: "\n") + "\n"
    }

    /// The source type, or that there is none: `Type=file` is the built-in default, so a config
    /// without `[Source] Path=` has no source at all and fetches nothing.
    static func describeSource(_ config: AgentConfig) -> String {
        if config.sourceType == .file && config.sourcePath == nil {
            let file = config.files.last ?? AgentConfig.defaultPath
            return "none (set [Source] Type= and Path= or URL= in \(file))"
        }
        return config.sourceType.rawValue
    }

    /// "3s ago", "5min ago", "2h ago", "in 4min".
    static func age(_ elapsed: Duration) -> String {
        let seconds = elapsed.milliseconds / 1_000
        let magnitude = abs(seconds)
        let text =
            magnitude < 120
            ? "\(magnitude)s"
            : magnitude < 7_200
                ? "\(magnitude / 60)min"
                : magnitude < 172_800 ? "\(magnitude / 3_600)h" : "\(magnitude / 86_400)d"
        return seconds >= 0 ? text + " ago" : "in " + text
    }
}
