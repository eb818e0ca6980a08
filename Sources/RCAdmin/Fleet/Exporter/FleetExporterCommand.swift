import Glibc
import RCCore
import RCService
import RCSystem

/// `rcadmin fleet exporter`: a Prometheus exporter for the fleet. Follows the retained reports
/// with the same ``ReportCollector`` watch as `fleet status --watch` and serves the aggregates
/// (``FleetMetrics``) on `/metrics` with ``MetricsServer``, until SIGTERM or SIGINT.
enum FleetExporterCommand {
    static let command = AdminCommand(
        words: ["fleet", "exporter"],
        synopsis: """
            --listen ADDRESS:PORT --mqtt URL [--topic TOPIC] [--per-device]
                                   [--max-versions N] [--timeout DURATION] [--max-devices N]
                                   \(MQTTLogin.synopsis)
            """,
        help: """
            Serves the fleet's aggregates for Prometheus on http://ADDRESS:PORT/metrics, from the
            agents' retained reports on TOPIC/+ (default rcagent/status) at URL, followed live as
            `fleet status --watch` follows them: devices per template version and per state,
            rollbacks per version, unreadable reports, the newest version (rcagent_fleet_*). No
            series per device unless --per-device (for small fleets: one series set per device).
            At most --max-versions N template versions (default 1000, the newest) get a series of
            their own; the devices on the others are counted as template_version="other".
            ADDRESS is numeric: 127.0.0.1:9800 serves this host only, [::1]:9800 over IPv6,
            0.0.0.0:9800 every interface; port 0 lets the system choose (the line on stderr says
            which). Plain HTTP without authentication: put a reverse proxy in front for TLS and
            auth (rcadmin(1)). Runs until SIGTERM or SIGINT (exit 0); exit status 1 when the broker
            cannot be reached, or the connection is lost for longer than --timeout (default 30s).
            """,
        options: [
            .value("listen", "ADDRESS:PORT"), .value("mqtt", "URL"), .value("topic", "TOPIC"), .flag("per-device"),
            .value("max-versions", "N"), .value("timeout", "DURATION"), .value("max-devices", "N"),
        ] + MQTTLogin.options,
        arguments: 0...0
    ) { options, _ throws(AdminFailure) in
        guard let listenText = options.value("listen") else {
            throw .usage("--listen ADDRESS:PORT is required (127.0.0.1:9800 for this host only)")
        }
        let listen: ListenAddress
        switch ListenAddress.parse(listenText) {
        case let .success(address): listen = address
        case let .failure(error): throw .usage(error.description)
        }
        guard options.value("mqtt") != nil else { throw .usage("--mqtt URL is required (the fleet's broker)") }
        let versionLimit =
            try options.integer("max-versions", in: 1...100_000).map(Int.init) ?? FleetMetrics.defaultVersionLimit
        let settings = try FleetStatusCommand.settings(options, defaultTimeout: FleetStatusCommand.defaultWatchTimeout)
        try await run(settings, listen: listen, versionLimit: versionLimit, perDevice: options.flag("per-device"))
    }

    static func run(
        _ settings: ReportCollector.Settings, listen: ListenAddress, versionLimit: Int, perDevice: Bool
    ) async throws(AdminFailure) {
        // Through the one lifecycle, first: a SIGTERM from now on stops the exporter, however early.
        let lifecycle: Lifecycle
        do { lifecycle = try Lifecycle(signals: [SIGINT, SIGTERM]) } catch {
            throw .failure("cannot catch signals: \(error)")
        }
        let collector = try ReportCollector(settings)
        let page = ExporterPage(versionLimit: versionLimit, perDevice: perDevice) { collector.reportsReceived }
        let server = try MetricsServer(listen: listen) { page.render() }
        Output.note("Serving the fleet's metrics on http://\(server.address)/metrics")
        let stop = StopSignal()
        let signalled = Task {
            if await lifecycle.nextSignal() != nil { stop.set() }
        }
        defer { signalled.cancel() }
        var failure: AdminFailure?
        do {
            try await DetachedThread.run(noThread: .failure("cannot start a thread")) { () throws(AdminFailure) in
                var overflowNoted = false
                try collector.watch(stop: stop, connected: page.connection) { inbox in
                    if inbox.overflow > 0 && !overflowNoted {
                        overflowNoted = true
                        Output.note(
                            "Note: reports on more than \(inbox.capacity) topics are not counted (--max-devices N)")
                    }
                    page.update(inbox)
                }
            }
        } catch {
            failure = error
        }
        // The collector has disconnected (the watch returned); the server goes last.
        let late = await Lifecycle.stop([Lifecycle.Part("the HTTP server") { server.stop() }], within: .seconds(5))
        if !late.isEmpty { Output.note("Failed to stop \(late.joined(separator: ", ")) within 5s, leaving it") }
        if let failure { throw failure }
    }
}
