@preconcurrency import Dispatch
import Glibc
import RCCore
import RCService
import RCStore
import RCSystem

/// `rcagentd`: the story of a run, in the order a small systemd daemon tells it: parse arguments,
/// load config, open state, bind the socket, READY=1 (the cache is loaded; the network may not be
/// up yet), run the services until SIGTERM (a reload on SIGHUP or `rcagent reload` swaps the
/// config's services in between), then STOPPING=1 and a clean exit.
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

    /// Parses the arguments, loads the config and runs the daemon; returns the exit status (64 for a
    /// usage error, 1 for a config that does not load or a start that fails).
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
        let loader = ConfigLoader(explicitPath: configPath, environment: environment)
        let config: AgentConfig
        do {
            config = try loader.load()
        } catch {
            log.error("Failed to load config: \(error)")
            return 1
        }
        for warning in config.warnings { log.warning("\(warning)") }
        do {
            return try await run(config: config, loader: loader, log: log)
        } catch {
            log.error("Failed to start: \(error)")
            return 1
        }
    }

    /// Everything after the config: the state, the agent, the services; READY=1; the lifecycle loop
    /// until a signal or a failed service; then the shutdown. Throws only before READY=1.
    static func run(config: AgentConfig, loader: ConfigLoader, log: Logger) async throws -> Int32 {
        // First, before anything starts: a SIGTERM from now on is a stop, however early.
        let lifecycle = try Lifecycle(signals: [SIGTERM, SIGINT, SIGHUP])
        let notifier = SystemdNotifier()
        // Before touching the state: one daemon per state directory, held until this process ends,
        // and a live daemon on our socket owns it.
        let lock = try DaemonLock(config: config, log: log)
        defer { withExtendedLifetime(lock) {} }
        if UnixSocket.answers(config.socket) {
            throw SystemError("bind \(config.socket) (another rcagentd is running there)", errno: EADDRINUSE)
        }
        let store = try StateRecovery.open(config: config, log: log)
        let deviceId = try store.status().deviceId ?? DeviceID.generate()
        let (configuration, source) = Configuration.build(config, deviceId: deviceId, log: log)
        let agent = try Agent(
            config: config, store: store, source: source, log: log, notifier: notifier)
        // Before anything is served; through the agent, so the hooks hear of it: a trial the daemon
        // (or the device) died during rolls back before anything else activates, then the on-start
        // activation, through the maintenance windows and holds (the hold lock watched from now on).
        try await agent.startActivation()
        let status = try await agent.status()

        // What ends the daemon, or reloads it: a signal, `rcagent reload`, or a service that
        // stopped working (then exit 1, and systemd starts the daemon again).
        let (events, lifecycleInput) = AsyncStream<LifecycleEvent>.makeStream()
        let serviceFailed: @Sendable (String) -> Void = { lifecycleInput.yield(.serviceFailed($0)) }
        // Everything that can fail at start fails before the socket is bound and READY=1 is sent.
        let configured = try configuration.parts(config, agent: agent, deviceId: deviceId, log: log).map {
            RunningPart(key: $0.key, services: ServiceSet([try $0.make()]))
        }
        let requests = ControlRequests(agent: agent) {
            await withCheckedContinuation { reply in lifecycleInput.yield(.reload { reply.resume(returning: $0) }) }
        }
        let server = try ControlServer(config: config, requests: requests, log: log)
        try server.start(onFailure: serviceFailed)
        let fixed = fixedServices(agent: agent, server: server, notifier: notifier, log: log)
        let signalForwarding = TaskService(name: "signal handler") {
            for await signal in lifecycle.signals.stream { lifecycleInput.yield(.signal(signal)) }
        }

        notifier.ready(status: "Serving template \(status.active.templateVersion ?? "-") (\(status.active.keys) keys)")
        log.notice("Started: \(source.name), socket \(config.socket), state \(config.databasePath)")
        if !source.isConfigured {
            log.warning("Serving the cache and defaults only: \(UnconfiguredSource.message)")
        }

        // Every service is a child of this one task group: the daemon's lifetime is the group's.
        // This task reads the lifecycle stream, so reloads happen one at a time, in order.
        let initial = Running(configuration: configuration, parts: configured)
        // Discarding: a service set a reload replaced ends, and nothing holds on to its task.
        // In a task of its own, so that the stop can give up on it at ``stopDeadline``.
        let (stopped, stoppedInput) = AsyncStream<Int32>.makeStream()
        let serving = Task {
            var running = initial
            await withDiscardingTaskGroup { group in
                for service in fixed + [signalForwarding] {
                    group.addTask { await service.supervised(onFailure: serviceFailed) }
                }
                for part in running.parts {
                    group.addTask { await part.services.run(onFailure: serviceFailed) }
                }
                func reloadNow(_ why: String) async -> Result<ReloadResponse, ControlError> {
                    log.notice("Reloading the config (\(why))")
                    notifier.reloading()
                    let result = await reload(&running, loader: loader, agent: agent, deviceId: deviceId, log: log) {
                        set in
                        group.addTask { await set.run(onFailure: serviceFailed) }
                    }
                    if case .failure = result {
                        // Stays in `systemctl status` until the next fetch round says something new.
                        notifier.ready(status: "Reload failed: the config does not load; running the previous one")
                    } else {
                        notifier.ready(status: "Reloaded")
                        await agent.updateStatusLine()
                    }
                    return result
                }
                var exitStatus: Int32 = 0
                events: for await event in events {
                    switch event {
                    case .signal(SIGHUP): _ = await reloadNow("SIGHUP")
                    case let .reload(reply): reply(await reloadNow("rcagent reload"))
                    case let .signal(signal):
                        log.notice("Stopping (signal \(signal))")
                        break events
                    case let .serviceFailed(reason):
                        log.error("\(reason); stopping (exit status 1) so that the daemon is started again")
                        exitStatus = 1
                        break events
                    }
                }
                notifier.stopping()
                stoppedInput.yield(exitStatus)
                // Cancellation is shutdown: each service stops its part (the socket file goes, watchers
                // are disconnected, waiting fetches hear "shutting down", MQTT disconnects keeping its
                // session) and the group returns once all of them have ended.
                group.cancelAll()
            }
        }
        var stoppedIterator = stopped.makeAsyncIterator()
        let exitStatus = await stoppedIterator.next() ?? 1
        // A fetch under way may take up to FetchTimeout; the stop waits for it only until the
        // deadline, then leaves it behind (the state is a SQLite transaction: it is never half written).
        let late = await Lifecycle.stop([Lifecycle.Part("services") { await serving.value }], within: stopDeadline)
        if !late.isEmpty {
            log.warning(
                "Stopping with the \(late.joined(separator: ", ")) still running after "
                    + "\(DurationText.format(stopDeadline)) (a fetch in flight is abandoned)")
        }
        // Reloads asked for while stopping are told so; the rest of the stream is dropped.
        lifecycleInput.finish()
        for await case let .reload(reply) in events {
            reply(.failure(ControlError(.shuttingDown, "the daemon is shutting down")))
        }
        notifier.flush()
        log.notice("Stopped")
        return exitStatus
    }

    /// How long a stop waits for the services to end: a fetch in flight (up to FetchTimeout) is
    /// abandoned after it, well within systemd's TimeoutStopSec.
    static let stopDeadline: Duration = .seconds(5)

    /// The services every config has: the control socket, the fetch loop, the wall-clock watch
    /// and the systemd watchdog.
    private static func fixedServices(agent: Agent, server: ControlServer, notifier: SystemdNotifier, log: Logger)
        -> [any Service]
    {
        var services: [any Service] = [
            EdgeService(name: "control socket") { { server.stop() } },
            TaskService(name: "fetch loop") { await agent.runOnOwnQueue() },
        ]
        do {
            let clock = try ClockWatch { agent.systemChanged(.clock) }
            services.append(EdgeService(name: "wall-clock watch") { { clock.stop() } })
        } catch {
            log.warning("Not watching the wall clock (\(error)): a clock step or resume waits for the timer")
        }
        if let interval = notifier.watchdogInterval {
            services.append(
                TaskService(name: "watchdog") {
                    // Pings only while the agent answers: a wedged agent is restarted by systemd.
                    while !Task.isCancelled {
                        await agent.heartbeat()
                        notifier.watchdog()
                        try? await Task.sleep(for: interval / 2)
                    }
                })
        }
        return services
    }

    /// What the config made of the daemon beyond the agent (which holds the config and the
    /// source), and the services it built from it, each under its ``Configuration/Part`` key.
    private struct Running {
        var configuration: Configuration
        var parts: [RunningPart]
    }

    private struct RunningPart {
        let key: String
        let services: ServiceSet
    }

    /// Re-reads agent.conf, its drop-ins and the defaults file, and applies what changed, in an
    /// order that leaves no gap: the services the new config adds are made first (one that cannot
    /// be made fails the reload, nothing changed), then the agent takes the config (and a new
    /// source, fetched from at once), then the services whose settings changed or that the config
    /// no longer has stop, then the new ones start. A service whose own settings did not change
    /// (the MQTT connection, when only the source changed) keeps running: no reconnect, no offline
    /// report, no extra fetch. Settings are compared by value (`60s` is `1min`). A config that
    /// does not load changes nothing. `start` runs a new service set.
    private static func reload(
        _ running: inout Running, loader: ConfigLoader, agent: Agent, deviceId: String, log: Logger,
        start: (ServiceSet) -> Void
    ) async -> Result<ReloadResponse, ControlError> {
        let loaded: AgentConfig
        do {
            loaded = try loader.load()
        } catch {
            log.error("Failed to reload the config: \(error); keeping the running config")
            return .failure(ControlError(.invalidConfig, error.description))
        }
        let old = await agent.config
        let changed = loaded.changedValues(since: old)
        let restartNeeded = changed.filter(Configuration.restartOnly.contains)
        let new = Configuration.applicable(loaded, running: old)
        let sourceChanged = changed.contains(where: Configuration.feedsSource) || Configuration.rereadsKeys(new)
        // Another source is built only when its settings changed; otherwise the running one stays.
        let built = sourceChanged ? Configuration.build(new, deviceId: deviceId, log: log) : nil
        let configuration = built?.0 ?? running.configuration
        let parts = configuration.parts(new, agent: agent, deviceId: deviceId, log: log)
        let runningKeys = Set(running.parts.map(\.key))
        let wanted = Set(parts.map(\.key))
        var added: [RunningPart] = []
        do {
            for part in parts where !runningKeys.contains(part.key) {
                added.append(RunningPart(key: part.key, services: ServiceSet([try part.make()])))
            }
        } catch {
            log.error("Failed to reload the config: \(error); keeping the running config")
            return .failure(ControlError(.invalidConfig, "\(error)"))
        }
        await agent.reconfigure(new, source: built?.1)
        await agent.reloadDefaults()
        running.configuration = configuration
        for part in running.parts where !wanted.contains(part.key) { await part.services.stop() }
        running.parts = running.parts.filter { wanted.contains($0.key) } + added
        for part in added { start(part.services) }
        for warning in loaded.warnings { log.warning("\(warning)") }
        for setting in restartNeeded {
            log.warning("\(setting) changed: it applies when the daemon is restarted")
        }
        log.notice("Reloaded the config: " + (changed.isEmpty ? "nothing changed" : changed.joined(separator: ", ")))
        return .success(
            ReloadResponse(changed: changed, restartNeeded: restartNeeded, warnings: loaded.warnings.map(\.description))
        )
    }

    /// What the daemon's main loop waits for.
    private enum LifecycleEvent: Sendable {
        case signal(Int32)
        /// `rcagent reload`: apply, and answer the control connection that asked.
        case reload(@Sendable (Result<ReloadResponse, ControlError>) -> Void)
        case serviceFailed(String)
    }
}

/// Where the daemon's config comes from, so a reload reads the same files the start did: the
/// `--config` path, or `RCAGENT_CONFIG`, or the default.
struct ConfigLoader: Sendable {
    let explicitPath: String?
    let environment: [String: String]

    /// Loads the config and checks what the daemon needs (the source has what its type requires).
    func load() throws(ConfigError) -> AgentConfig {
        let config = try AgentConfig.load(explicitPath: explicitPath, environment: environment)
        try config.validateSource()
        return config
    }
}
