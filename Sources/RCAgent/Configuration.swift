import RCCore
import RCFirebase
import RCService
import RCSystem
import RCTemplate

/// What one config makes of the daemon beyond its fixed parts: the source, built here and handed
/// to the agent (its fetch loop is the one place that holds it), and the services that depend on
/// the config (the file source's watch, the Firebase realtime stream, the MQTT connections, the
/// network watch), each named by the settings it is made from, so that a reload replaces only
/// those whose settings changed. The config itself lives in the agent (``Agent/config``).
struct Configuration {
    /// Which source it is, with what its services need of it (never a downcast of the source).
    private let kind: Kind

    private enum Kind {
        case unconfigured
        case file(path: String)
        case http
        /// The realtime stream of the same project and installation as the source's fetches.
        case firebase(RealtimeStream, name: String)

        var usesNetwork: Bool {
            switch self {
            case .unconfigured, .file: false
            case .http, .firebase: true
            }
        }
    }

    /// Builds the source the config names, for the agent, and what its services need. Nothing
    /// starts yet.
    static func build(_ config: AgentConfig, deviceId: String, log: Logger) -> (Configuration, any ConfigSource) {
        let gate = config.trustedKeys.map { SignatureGate(config: config, keysPath: $0, log: log) }
        let reader = DocumentReader(deviceId: deviceId, signals: config.signals, log: log, opener: gate)
        switch config.sourceType {
        case .file:
            guard let path = config.sourcePath else {
                return (Configuration(kind: .unconfigured), UnconfiguredSource())
            }
            return (Configuration(kind: .file(path: path)), FileSource(path: path, reader: reader))
        case .http:
            return (Configuration(kind: .http), HTTPSource(config: config, reader: reader))
        case .firebase:
            let firebase = FirebaseSource(config: config, deviceId: deviceId, environment: Environment.current())
            return (Configuration(kind: .firebase(firebase.realtime, name: firebase.name)), firebase)
        }
    }

    /// One service of a config, named by the values of the settings it is made from: a reload
    /// keeps running a service whose key it finds again, and makes (``make``) only the new ones.
    struct Part {
        let key: String
        let make: () throws -> any Service
    }

    /// The services `config` runs around `agent`, not made yet. Making one fails only where the
    /// daemon cannot go on as configured (an MQTT client that cannot be made); a network watch the
    /// kernel refuses is logged and left out, as timers and pushes still start fetches.
    func parts(_ config: AgentConfig, agent: Agent, deviceId: String, log: Logger) -> [Part] {
        var parts: [Part] = []
        switch kind {
        case let .file(path):
            parts.append(Part(key: "watch \(path)") { Self.fileWatch(path, agent: agent, log: log) })
        case let .firebase(stream, name) where config.realtime != .no:
            // The stream belongs to this source: another source (any setting feeding it) brings another.
            let key = "realtime " + Self.values(of: config) { Self.feedsSource($0) || $0 == "Push.Realtime" }
            parts.append(
                Part(key: key) {
                    let listener = RealtimeListener(stream: stream, agent: agent, log: log)
                    return TaskService(name: "realtime stream of \(name)") { await listener.run() }
                })
        case .unconfigured, .http, .firebase:
            break
        }
        // The connections depend on `[Push]` (but its realtime switch) and `[Report]` only: a new
        // source keeps them, and with them the broker's session and the report's online state.
        let mqtt = Self.values(of: config) {
            ($0.hasPrefix("Push.") && $0 != "Push.Realtime") || ($0.hasPrefix("Report.") && $0 != "Report.MetricsFile")
        }
        if !config.mqttBrokers.isEmpty {
            parts.append(
                Part(key: "mqtt push " + mqtt) {
                    try MQTTService.push(config: config, deviceId: deviceId, agent: agent, log: log)
                })
        }
        if config.reportTopic != nil && !config.reportSharesPushConnection {
            parts.append(
                Part(key: "mqtt report " + mqtt) {
                    try MQTTService.report(config: config, deviceId: deviceId, agent: agent, log: log)
                })
        }
        if let path = config.metricsFile {
            parts.append(
                Part(key: "metrics \(path)") {
                    MetricsService(writer: MetricsWriter(path: path, subject: agent, log: log))
                })
        }
        if kind.usesNetwork {
            parts.append(Part(key: "network watch") { Self.networkWatch(agent: agent, log: log) })
        }
        return parts
    }

    private static func fileWatch(_ path: String, agent: Agent, log: Logger) -> any Service {
        EdgeService(name: "watch on \(path)") {
            let watcher = FileWatcher(path: path) { agent.request(.sourceChanged) }
            log.info("Watching \(path): \(watcher.start())")
            return { watcher.stop() }
        }
    }

    private static func networkWatch(agent: Agent, log: Logger) -> any Service {
        do {
            let monitor = try NetworkMonitor { agent.systemChanged(.network) }
            return EdgeService(name: "network watch") { { monitor.stop() } }
        } catch {
            log.warning("Not watching the network (\(error)): only timers and pushes start fetches")
            return TaskService(name: "network watch (off)") {}
        }
    }

    /// The values of the settings `included` picks, as the daemon reads them, in one line: a
    /// service's key.
    private static func values(of config: AgentConfig, _ included: (String) -> Bool) -> String {
        let names = Set(config.assignments.keys).union(config.signals.map { "Signals.\($0.name)" }).filter(included)
        return names.sorted().map { "\($0)=\(config.settingValue($0) ?? "")" }.joined(separator: "\u{1F}")
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
