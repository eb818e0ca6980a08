import RCCore
import RCService
import RCTemplate

/// What one config makes of the daemon beyond its fixed parts: the source, and the services that
/// depend on the config (the file source's watch, the Firebase realtime stream, the MQTT channel,
/// the network watch). A reload builds a new one and swaps it in whole.
struct Configuration {
    let config: AgentConfig
    let source: any ConfigSource
    /// Which source it is, for the services that belong to it (never a downcast of `source`).
    private let kind: Kind

    private enum Kind {
        case unconfigured
        case file(path: String)
        case http
        case firebase(FirebaseSource)

        var usesNetwork: Bool {
            switch self {
            case .unconfigured, .file: false
            case .http, .firebase: true
            }
        }
    }

    /// Builds the source the config names. Nothing starts yet.
    init(_ config: AgentConfig, deviceId: String, log: Logger) {
        self.config = config
        let gate = config.trustedKeys.map { SignatureGate(config: config, keysPath: $0, log: log) }
        let reader = DocumentReader(deviceId: deviceId, signals: config.signals, log: log, opener: gate)
        switch config.sourceType {
        case .file:
            if let path = config.sourcePath {
                source = FileSource(path: path, reader: reader)
                kind = .file(path: path)
            } else {
                source = UnconfiguredSource()
                kind = .unconfigured
            }
        case .http:
            source = HTTPSource(config: config, reader: reader)
            kind = .http
        case .firebase:
            let firebase = FirebaseSource(config: config, deviceId: deviceId, environment: Environment.current())
            source = firebase
            kind = .firebase(firebase)
        }
    }

    /// The running source with another config's push settings: a reload that changes only
    /// `[Push]` keeps the source (and its Firebase installation client, whose registration in
    /// flight the realtime stream and the fetches share).
    init(_ config: AgentConfig, keepingSourceOf running: Configuration) {
        self.config = config
        source = running.source
        kind = running.kind
    }

    /// The services this config runs around `agent`. Fails only where the daemon cannot go on as
    /// configured (an MQTT client that cannot be made); a network watch the kernel refuses is
    /// logged and left out, as timers and pushes still start fetches.
    func services(agent: Agent, deviceId: String, log: Logger) throws -> [any Service] {
        var services: [any Service] = []
        switch kind {
        case let .file(path):
            services.append(Self.fileWatch(path, agent: agent, log: log))
        case let .firebase(firebase) where config.realtime != .no:
            let listener = RealtimeListener(source: firebase, agent: agent, log: log)
            services.append(TaskService(name: "realtime stream of \(firebase.name)") { await listener.run() })
        case .unconfigured, .http, .firebase:
            break
        }
        if !config.mqttBrokers.isEmpty {
            services.append(try MQTTService.push(config: config, deviceId: deviceId, agent: agent, log: log))
        }
        if config.reportTopic != nil && !config.reportSharesPushConnection {
            services.append(try MQTTService.report(config: config, deviceId: deviceId, agent: agent, log: log))
        }
        if kind.usesNetwork {
            do {
                let monitor = try NetworkMonitor { agent.systemChanged(.network) }
                services.append(EdgeService(name: "network watch") { { monitor.stop() } })
            } catch {
                log.warning("Not watching the network (\(error)): only timers and pushes start fetches")
            }
        }
        return services
    }

    private static func fileWatch(_ path: String, agent: Agent, log: Logger) -> any Service {
        EdgeService(name: "watch on \(path)") {
            let watcher = FileWatcher(path: path) { agent.request(.sourceChanged) }
            log.info("Watching \(path): \(watcher.start())")
            return { watcher.stop() }
        }
    }

    // MARK: - Reload

    /// Settings a running daemon cannot take: the socket it is bound to and the state it has open.
    static let restartOnly: Set<String> = ["Agent.StateDirectory", "Agent.Socket", "Agent.SocketGroup"]

    /// Whether a changed setting feeds the source (a new source is built and fetched from at once).
    static func feedsSource(_ setting: String) -> Bool {
        setting.hasPrefix("Source.") || setting.hasPrefix("Signals.")
            || ["App.Version", "App.Package", "Agent.FetchTimeout"].contains(setting)
    }

    /// Whether a reload builds the source again even when no setting changed: trusted keys are read at
    /// start and at every reload (a key added to or removed from `TrustedKeys=`'s directory changes no
    /// setting), and only a new source reads them.
    static func rereadsKeys(_ config: AgentConfig) -> Bool { config.trustedKeys != nil }

    /// Whether a changed setting feeds the services around the source (the push channels, the report).
    static func feedsServices(_ setting: String) -> Bool {
        feedsSource(setting) || setting.hasPrefix("Push.") || setting.hasPrefix("Report.")
    }

    /// `new` as a running daemon can apply it: the restart-only settings keep their running values.
    static func applicable(_ new: AgentConfig, running: AgentConfig) -> AgentConfig {
        var config = new
        config.stateDirectory = running.stateDirectory
        config.socket = running.socket
        config.socketGroup = running.socketGroup
        for setting in restartOnly { config.assignments[setting] = running.assignments[setting] }
        return config
    }
}

/// One MQTT connection as a service, with what rides on it: the push channel, the device report,
/// or both (one connection per device when they go to the same brokers). It owns the connection's
/// lifetime: the report's last word (offline, acknowledged) goes out before the disconnect. A
/// reload that replaces it takes the channel's topics out of the broker's persistent session
/// first, or pings on the old topics would still be delivered.
struct MQTTService: Service {
    let name: String
    private let connection: MQTTConnection
    private let channel: MQTTChannel?
    private let reporter: Reporter?
    private let log: Logger

    /// The push channel's connection (client id = device id, persistent session), carrying the
    /// report too when it goes to the same brokers.
    static func push(config: AgentConfig, deviceId: String, agent: Agent, log: Logger) throws(MQTTConnection.SetupError)
        -> MQTTService
    {
        let connection = try MQTTConnection(
            urls: config.mqttBrokers, clientId: deviceId, cleanSession: false, credentials: .push(config), log: log)
        let channel = MQTTChannel(config: config, deviceId: deviceId, connection: connection, agent: agent, log: log)
        let reporter =
            config.reportSharesPushConnection
            ? config.reportTopic.map {
                Reporter(prefix: $0, deviceId: deviceId, agent: agent, connection: connection, log: log)
            } : nil
        let what = reporter == nil ? "MQTT channel" : "MQTT channel and report"
        return MQTTService(
            name: "\(what) \(config.mqttBrokers.joined(separator: " "))", connection: connection, channel: channel,
            reporter: reporter, log: log)
    }

    /// A connection of the report's own (`[Report] MQTT=` names other brokers than the push
    /// channel's): a clean session that subscribes to nothing, under its own client id.
    static func report(config: AgentConfig, deviceId: String, agent: Agent, log: Logger) throws(MQTTConnection
        .SetupError) -> MQTTService
    {
        let connection = try MQTTConnection(
            urls: config.reportBrokers, clientId: deviceId + "-report", cleanSession: true,
            credentials: .report(config), log: log)
        let reporter = Reporter(
            prefix: config.reportTopic ?? "", deviceId: deviceId, agent: agent, connection: connection, log: log)
        return MQTTService(
            name: "MQTT report \(config.reportBrokers.joined(separator: " "))", connection: connection, channel: nil,
            reporter: reporter, log: log)
    }

    func run() async throws {
        connection.onEvent { [channel, reporter, connection] event in
            channel?.handle(event)
            reporter?.handle(event)
            // The channel gives a message's room back once handled; without one nothing holds it.
            if channel == nil, case let .message(topic, payload) = event {
                connection.consumed(topic: topic, payload: payload)
            }
        }
        await reporter?.prepare()
        if !connection.start() {
            // Without its thread the connection is dead: say so in the log and in status, not nothing.
            log.error("Failed to start the MQTT network thread; MQTT is off until a restart")
            channel?.noNetworkThread()
        }
        // Both end when the task is cancelled (the daemon stops, a reload replaces the service).
        await withDiscardingTaskGroup { group in
            if let channel { group.addTask { await channel.run() } }
            if let reporter { group.addTask { await reporter.run() } }
        }
        await reporter?.goodbye()
        await connection.stop()  // on a thread of its own: it waits for the network thread
    }

    func retire() async { channel?.unsubscribe() }
}

/// A service whose work is one async function that may end by itself and has no failure to
/// report (the realtime stream gives up for good on an error the server means as final, and the
/// daemon goes on without it): once it returns, the service idles until cancelled.
struct TaskService: Service {
    let name: String
    let body: @Sendable () async -> Void

    func run() async throws {
        await body()
        await untilCancelled()
    }
}
