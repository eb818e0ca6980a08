@preconcurrency import Dispatch
import Glibc
import RCCore
import RCStore

/// `rcagentd`: the story of a run, in the order a small systemd daemon tells it: parse arguments,
/// load config, open state, bind the socket, READY=1 (the cache is loaded; the network may not be
/// up yet), serve until SIGTERM, then STOPPING=1 and a clean exit.
public enum Daemon {
    public static let version = BuildInfo.version

    static let usage = """
        Usage: rcagentd [--config PATH]

        The rcagent daemon: fetches remote config, keeps it in its SQLite cache, activates it,
        and answers rcagent on its control socket. Runs in the foreground (systemd Type=notify).

        Options:
          --config PATH   config file (default: $RCAGENT_CONFIG or /etc/rcagent/agent.conf)
          --help          show this help
          --version       show the version

        """

    public static func main(arguments: [String], environment: [String: String] = Environment.current()) async -> Int32 {
        var configPath: String?
        var index = 0
        while index < arguments.count {
            switch arguments[index] {
            case "--help", "-h":
                print(usage, terminator: "")
                return 0
            case "--version":
                print("rcagentd \(version)")
                return 0
            case "--config" where index + 1 < arguments.count:
                configPath = arguments[index + 1]
                index += 1
            case let other where other.hasPrefix("--config="):
                configPath = String(other.dropFirst("--config=".count))
            default:
                Logger.standardError("Error: unexpected argument '\(arguments[index])'\n\(usage)")
                return 64
            }
            index += 1
        }
        let log = Logger()
        let config: AgentConfig
        do {
            config = try AgentConfig.load(explicitPath: configPath, environment: environment)
            try config.validateSource()
        } catch {
            log.error("Failed to load config: \(error)")
            return 1
        }
        for warning in config.warnings { log.warning("\(warning)") }
        do {
            return try await run(config: config, log: log)
        } catch {
            log.error("Failed to start: \(error)")
            return 1
        }
    }

    static func run(config: AgentConfig, log: Logger) async throws -> Int32 {
        signal(SIGPIPE, SIG_IGN)
        let notifier = SystemdNotifier()
        // Before touching the state: a live daemon on our socket owns it.
        if UnixSocket.answers(config.socket) {
            throw SystemError("bind \(config.socket) (another rcagentd is running there)", errno: EADDRINUSE)
        }
        let store = try StateRecovery.open(config: config, log: log)
        let source = makeSource(config, deviceId: try store.status().deviceId ?? DeviceID.generate(), log: log)
        StateRecovery.loadDefaults(into: store, config: config, log: log)
        let agent = try Agent(config: config, store: store, source: source, log: log, notifier: notifier)
        // Before anything is served; through the agent, so the hooks hear of it.
        if config.activation == .onStart { _ = try await agent.activate(fetchedBeforeStart: true) }
        let status = try await agent.status()
        // Everything that can fail at start fails before the socket is bound and READY=1 is sent.
        let mqtt = try config.mqtt.map { _ in
            try MQTTChannel(config: config, deviceId: status.deviceId ?? "", agent: agent, log: log)
        }
        let server = try ControlServer(config: config, agent: agent, log: log)
        // What ends the daemon: a signal, or a service that stopped working (then exit 1, and
        // systemd starts the daemon again).
        let (lifecycle, lifecycleInput) = AsyncStream<LifecycleEvent>.makeStream()
        try server.start { reason in lifecycleInput.yield(.serviceFailed(reason)) }

        let signals = try SignalStream([SIGTERM, SIGINT, SIGHUP])
        let forwarding = Task { for await signal in signals.stream { lifecycleInput.yield(.signal(signal)) } }
        var watcher: FileWatcher?
        if let file = source as? FileSource {
            watcher = FileWatcher(path: file.path) { Task { await agent.request(.sourceChanged) } }
            log.info("Watching \(file.path): \(watcher!.start())")
        }
        notifier.ready(status: "Serving template \(status.active.templateVersion ?? "-") (\(status.active.keys) keys)")
        log.notice("Started: \(source.name), socket \(config.socket), state \(config.databasePath)")
        if source is UnconfiguredSource {
            log.warning("Serving the cache and defaults only: \(UnconfiguredSource.message)")
        }

        let fetchLoop = Task { await agent.runFetchLoop() }
        mqtt?.start()
        // The network coming up matters to sources that use it; a clock set (or a resume) to all.
        var network: NetworkMonitor?
        if !(source is FileSource || source is UnconfiguredSource) {
            do { network = try NetworkMonitor { Task { await agent.systemChanged(.network) } } } catch {
                log.warning("Not watching the network (\(error)): only timers and pushes start fetches")
            }
        }
        var clock: ClockWatch?
        do { clock = try ClockWatch { Task { await agent.systemChanged(.clock) } } } catch {
            log.warning("Not watching the wall clock (\(error)): a clock step or resume waits for the timer")
        }
        var realtime: Task<Void, Never>?
        if let firebase = source as? FirebaseSource, config.realtime != .no {
            let listener = RealtimeListener(source: firebase, agent: agent, log: log)
            realtime = Task { await listener.run() }
        }
        let watchdog = notifier.watchdogInterval.map { interval in
            Task {
                while !Task.isCancelled {
                    await agent.heartbeat()
                    notifier.watchdog()
                    try? await Task.sleep(for: interval / 2)
                }
            }
        }

        var exitStatus: Int32 = 0
        events: for await event in lifecycle {
            switch event {
            case .signal(SIGHUP):
                log.notice("Reloading defaults (SIGHUP)")
                await agent.reloadDefaults()
            case let .signal(signal):
                log.notice("Stopping (signal \(signal))")
                break events
            case let .serviceFailed(reason):
                log.error("\(reason); stopping (exit status 1) so that the daemon is started again")
                exitStatus = 1
                break events
            }
        }
        forwarding.cancel()
        notifier.stopping()
        server.stop()
        watcher?.stop()
        network?.stop()
        clock?.stop()
        watchdog?.cancel()
        realtime?.cancel()
        mqtt?.stop()
        await agent.stop()
        await fetchLoop.value
        notifier.flush()
        log.notice("Stopped")
        return exitStatus
    }

    /// What the daemon's main loop waits for.
    private enum LifecycleEvent: Sendable {
        case signal(Int32)
        case serviceFailed(String)
    }

    static func makeSource(_ config: AgentConfig, deviceId: String, log: Logger) -> any ConfigSource {
        let reader = DocumentReader(deviceId: deviceId, signals: config.signals, log: log)
        switch config.sourceType {
        case .file:
            return config.sourcePath.map { FileSource(path: $0, reader: reader) } ?? UnconfiguredSource()
        case .http:
            return HTTPSource(config: config, reader: reader)
        case .firebase:
            return FirebaseSource(config: config, deviceId: deviceId, environment: Environment.current())
        }
    }
}
