import Glibc
import RCCore
import RCFirebase
import RCGoogle
import RCHTTP
import RCService
import RCSystem
import Synchronization

/// The MQTT half of the relay: the stale ping at QoS 1 to the `[Push] MQTT=` broker and
/// `MQTTTopic=`, acknowledged by the broker. One connection per ping: pings are rare (one per
/// publish) and a fresh connection survives a broker restart without reconnect logic.
struct MQTTPingTarget: PingTarget {
    let url: String
    let topic: String
    let login: MQTTLogin

    var name: String { "mqtt \(url) \(topic)" }

    func ping(version: Int64) async throws(RelayError) {
        let payload = StalePing.mqttPayload(templateVersion: String(version))
        try await DetachedThread.run(noThread: RelayError("cannot start a thread")) { () throws(RelayError) in
            do throws(MQTTPublisher.Failure) {
                // The password file is read for every ping: a rotated password needs no restart.
                try MQTTPublisher.publish(url: url, topic: topic, payload: payload, login: login)
            } catch {
                throw RelayError(error.description)
            }
        }
    }
}

/// The FCM half: the stale ping as an FCM HTTP v1 topic message, with the service account.
struct FCMPingTarget: PingTarget {
    let topic: String
    let fcm: FCMAPI

    var name: String { "fcm \(topic)" }

    func ping(version: Int64) async throws(RelayError) {
        do {
            _ = try await fcm.send(StalePing.fcmMessage(topic: topic, templateVersion: String(version)))
        } catch {
            throw RelayError(error.description)
        }
    }
}

extension AdminTool {
    static let relayUsage = """
        Usage: rcadmin relay --config FILE

        Follows the Firebase project's template version over the realtime stream and sends the stale
        ping carrying each new version to the MQTT topic and/or the FCM topic. FILE uses agent.conf
        syntax: [Source] Type=firebase, ProjectId=, APIKey=, AppId= (the project to follow);
        [Push] MQTT=, MQTTTopic= (where to ping); [Relay] FCMTopic= (ping over FCM too, with the
        service account GOOGLE_APPLICATION_CREDENTIALS names); [Agent] StateDirectory= (its
        installation and the last relayed version). Runs until SIGTERM (exit 0); every failure is
        retried with backoff, except a refusal no retry changes (featureDisabled, HTTP 403, an API
        key Google does not know, a project or app Firebase does not know: HTTP 404 NOT_FOUND),
        which ends it with exit status 78.

        """

    static func relay(_ arguments: [String], environment: [String: String]) -> Int32 {
        // First, before anything starts: a SIGTERM from now on is a stop, however early.
        let lifecycle: Lifecycle
        do { lifecycle = try Lifecycle(signals: [SIGTERM, SIGINT]) } catch {
            return failure("cannot catch signals: \(error)")
        }
        // The commands' own parser: `--config=FILE` as well, a repeated or valueless option refused,
        // and what is echoed back escaped.
        let options: ParsedOptions
        do { options = try ParsedOptions(arguments, options: [.value("config", "FILE")]) } catch {
            return usageError(error.message)
        }
        if options.help {
            Output.data(relayUsage)
            return 0
        }
        if let stray = options.positionals.first {
            return usageError("relay takes no arguments, got '\(TextEscaping.terminal(stray))'")
        }
        guard let configPath = options.value("config"), !configPath.isEmpty else {
            return usageError("relay needs --config FILE")
        }
        let log = Logger()
        let config: AgentConfig
        do { config = try AgentConfig.load(explicitPath: configPath, environment: environment) } catch {
            return failure("\(error)")
        }
        for warning in config.warnings { log.warning("\(warning)") }
        guard config.sourceType == .firebase, let project = config.projectId, let apiKey = config.apiKey,
            let appId = config.appId
        else {
            return failure(
                "\(configPath): the relay follows a Firebase project: [Source] Type=firebase with ProjectID=, APIKey= and AppID="
            )
        }
        var targets: [any PingTarget] = []
        if let url = config.mqtt {
            targets.append(
                MQTTPingTarget(url: url, topic: config.mqttTopic, login: MQTTLogin(pushOf: config)))
        }
        if let topic = config.relayFCMTopic {
            // The service account of the command line's convention; the project is the one followed.
            guard let keyFile = environment["GOOGLE_APPLICATION_CREDENTIALS"], !keyFile.isEmpty else {
                return failure(
                    "\(configPath): [Relay] FCMTopic= needs the service account: set GOOGLE_APPLICATION_CREDENTIALS")
            }
            let account: ServiceAccount
            do { account = try ServiceAccount.load(path: keyFile) } catch { return failure("\(error)") }
            if let warning = ServiceAccount.exposureWarning(path: keyFile) { log.warning(warning) }
            let api = GoogleAPI(tokens: AccessTokens(account: account, scopes: [GoogleScope.messaging]))
            targets.append(
                FCMPingTarget(topic: topic, fcm: FCMAPI(api: api, project: project, endpoint: config.endpoint)))
        }
        guard !targets.isEmpty else {
            return failure("\(configPath): nowhere to ping: set [Push] MQTT= or [Relay] FCMTopic=")
        }
        if mkdir(config.stateDirectory, 0o700) != 0 && errno != EEXIST {
            return failure("cannot create \(config.stateDirectory): \(SystemError("mkdir"))")
        }
        let ledger: RelayLedger
        do { ledger = try RelayLedger(path: config.stateDirectory + "/relay.json") } catch {
            return failure("\(error)")
        }
        do { try ledger.save() } catch {
            return failure("cannot write the ledger of relayed versions in \(config.stateDirectory): \(error)")
        }

        let endpoints = FirebaseEndpoints(project: project, apiKey: apiKey, endpoint: config.endpoint)
        var base = HTTPRequest(url: "")
        base.caFile = config.caFile
        base.maximumResponseSize = config.maxResponseSize
        base.userAgent = "rcadmin/\(BuildInfo.version)"
        let installations = InstallationClient(
            endpoints: endpoints, appId: appId, installationId: DeviceID.generate(),
            credentialsPath: config.stateDirectory + "/installation.json", base: base)
        // The fetch that confirms an announced version: the client fetch a device makes, as an app
        // of no particular version.
        let fetcher = RemoteConfigFetcher(
            endpoints: endpoints, installations: installations, appId: appId, appVersion: "0", packageName: nil,
            signals: [], facts: DeviceFacts(), base: base)
        let relay = Relay(
            stream: RealtimeStream(endpoints: endpoints, appId: appId, installations: installations, base: base),
            fetcher: fetcher, targets: targets, ledger: ledger, project: project, log: log,
            notifier: SystemdNotifier())
        let end = blockingWait { await runUntilSignalled(lifecycle, log: log) { await relay.run() } }
        return end == .refused ? refusedStatus : 0
    }

    /// The exit status when the project refuses the relay for good (featureDisabled, 403, an API
    /// key Google does not know, a 404 NOT_FOUND for the project or app): EX_CONFIG, which the unit's RestartPreventExitStatus= keeps
    /// systemd from restarting in a loop. Every other failure is retried inside the relay.
    static let refusedStatus: Int32 = 78

    /// How long a stop waits for a ping in flight. An MQTT ping blocks in the broker's
    /// acknowledgement (up to 30 s), an FCM one in its HTTP transfer (up to a minute): neither
    /// notices cancellation. Leaving one behind is safe, since a ping not yet in the ledger is sent
    /// again at the next start, and a stop that takes a minute is one systemd may kill.
    static let stopGrace: Duration = .seconds(5)

    /// Runs `body` in a task that SIGTERM or SIGINT cancels, and waits for it, at most
    /// ``stopGrace`` after the signal. Returns how the relay ended (`.cancelled` after a signal).
    private static func runUntilSignalled(
        _ lifecycle: Lifecycle, log: Logger, _ body: @escaping @Sendable () async -> Relay.End
    ) async -> Relay.End {
        // nil: a signal came first.
        let (ended, endedInput) = AsyncStream<Relay.End?>.makeStream()
        let task = Task {
            let end = await body()
            endedInput.yield(end)
            return end
        }
        let signalled = Task {
            if let number = await lifecycle.nextSignal() {
                log.notice("Stopping (signal \(number))")
                endedInput.yield(nil)
            }
        }
        var iterator = ended.makeAsyncIterator()
        var end = await iterator.next() ?? nil
        signalled.cancel()
        if end == nil {
            task.cancel()
            let late = await Lifecycle.stop([Lifecycle.Part("relay") { _ = await task.value }], within: stopGrace)
            if late.isEmpty {
                end = await task.value
            } else {
                log.warning(
                    "Stopping with a ping still in flight after \(DurationText.format(stopGrace)); "
                        + "a version it did not record is sent again at the next start")
            }
        }
        let notifier = SystemdNotifier()
        notifier.stopping()
        notifier.flush()  // sent from a queue: out before the process exits
        return end ?? .cancelled
    }
}
