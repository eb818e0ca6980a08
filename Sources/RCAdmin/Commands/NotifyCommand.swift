import RCCore
import RCGoogle
import RCSystem

/// Where a push goes and how, from the command line: MQTT (`--mqtt URL` and its broker options),
/// FCM (`--fcm`, with the service account), or both. One reading of these options, and one way of
/// sending, for `notify-stale`, `set-update --notify` and `activity`, so all of them reach the
/// fleet the same way.
struct PushDestinations: Sendable {
    static let options: [OptionSpec] =
        [
            .value("mqtt", "URL"), .flag("fcm"), .value("topic", "TOPIC"), .value("device", "ID"),
        ] + MQTTLogin.options

    let mqtt: String?
    let fcm: Bool
    /// The FCM topic of the stale ping, and the MQTT topic before `/device`.
    let topic: String
    let device: String?
    let login: MQTTLogin

    var isRequested: Bool { mqtt != nil || fcm }

    /// The MQTT topic a publish goes to: the fleet's, or one device's (`TOPIC/ID`) with `--device`.
    var mqttTopic: String { topic + (device.map { "/" + $0 } ?? "") }

    init(_ options: ParsedOptions) throws(AdminFailure) {
        mqtt = options.value("mqtt")
        fcm = options.flag("fcm")
        topic = options.value("topic") ?? "PUSH_RC"
        device = options.value("device")
        login = try MQTTLogin(options)
        guard !topic.isEmpty else { throw .usage("--topic must not be empty") }
        // A publish may not carry MQTT's wildcards; nor may an FCM topic name.
        if topic.contains("+") || topic.contains("#") {
            throw .usage("--topic must not contain the MQTT wildcards + or #, got '\(TextEscaping.terminal(topic))'")
        }
        // One topic level: a `/` would address a subtree and `+`/`#` are wildcards a publish may not carry.
        if let device, device.isEmpty || device.contains("/") || device.contains("+") || device.contains("#") {
            throw .usage("--device must be one MQTT topic level, got '\(TextEscaping.terminal(device))'")
        }
        // Options that would be silently ignored are refused: the operator meant something by them.
        if mqtt == nil, device != nil || !login.isEmpty {
            throw .usage(
                "--device, --ca-file, --cert-file, --key-file, --username and --password-file go with --mqtt URL")
        }
    }

    /// One place a push goes.
    enum Target: Sendable {
        case fcm
        case mqtt(url: String)
    }

    /// The destinations asked for, FCM first.
    var targets: [Target] { (fcm ? [.fcm] : []) + (mqtt.map { [.mqtt(url: $0)] } ?? []) }

    /// Sends to every target in turn with `send` and prints the line it returns (on stderr with
    /// `notesOnly`: after `set-update --json`, stdout is the JSON). Each is tried even when another
    /// failed (a broker down must not keep the FCM half from going out). Each failure is one
    /// `Error:` line: an earlier one is printed when the next happens, the last is thrown (and
    /// printed once by the caller) with the first one's kind, so the exit status says the first.
    func deliver(
        _ what: String, notesOnly: Bool = false, _ send: (Target) async throws(AdminFailure) -> String
    ) async throws(AdminFailure) {
        var firstKind: AdminFailure.Kind?
        var pending: AdminFailure?
        for target in targets {
            do {
                let line = try await send(target)
                if notesOnly { Output.note(line) } else { Output.data(line + "\n") }
            } catch {
                if let pending { Output.note("Error: \(pending.message)") }
                pending = error
                firstKind = firstKind ?? error.kind
            }
        }
        guard let pending, let firstKind else { return }
        let rest = targets.count > 1 ? " (\(what) did not go out everywhere)" : ""
        throw AdminFailure(firstKind, pending.message + rest)
    }

    /// Sends the ping carrying `templateVersion` (and `"activate": "now"` with `activateNow`) to
    /// every destination asked for, one line of output each, as ``deliver(_:notesOnly:_:)`` does.
    func send(templateVersion: String?, activateNow: Bool = false, google: GoogleContext?, notesOnly: Bool = false)
        async throws(AdminFailure)
    {
        try await deliver("the stale ping", notesOnly: notesOnly) { target throws(AdminFailure) in
            switch target {
            case .fcm:
                guard let google else { throw .failure("no service account for FCM") }
                return try await sendFCM(templateVersion: templateVersion, activateNow: activateNow, api: google.fcm)
            case let .mqtt(url):
                return try await sendMQTT(url: url, templateVersion: templateVersion, activateNow: activateNow)
            }
        }
    }

    /// The FCM v1 topic message, checked locally as FCM would before it is sent. Returns what was done.
    func sendFCM(templateVersion: String?, activateNow: Bool = false, api: FCMAPI) async throws(AdminFailure)
        -> String
    {
        let message = StalePing.fcmMessage(topic: topic, templateVersion: templateVersion, activateNow: activateNow)
        let name = try await GoogleContext.call { () async throws(GoogleError) in
            try api.validate(message)
            return try await api.send(message)
        }
        return "sent \(message["data"]?.compactText ?? "") to FCM topic \(TextEscaping.terminal(topic)) as "
            + TextEscaping.terminal(name)
    }

    /// The stale ping's MQTT payload, published as ``publish(_:url:what:)`` does.
    func sendMQTT(url: String, templateVersion: String?, activateNow: Bool = false) async throws(AdminFailure)
        -> String
    {
        let payload = StalePing.mqttPayload(templateVersion: templateVersion, activateNow: activateNow)
        try await publish(payload, url: url, what: "the stale ping")
        return "published \(payload) to \(TextEscaping.terminal(mqttTopic))"
    }

    /// Publishes `payload` at QoS 1 to ``mqttTopic`` at `url` with the broker options, on a thread
    /// of its own: the publisher blocks until the broker acknowledges, and the cooperative pool
    /// has only two threads. `what` names the payload in the error.
    func publish(_ payload: String, url: String, what: String) async throws(AdminFailure) {
        let fullTopic = mqttTopic
        do throws(MQTTPublisher.Failure) {
            try await DetachedThread.run(noThread: MQTTPublisher.Failure(description: "cannot start a thread")) {
                () throws(MQTTPublisher.Failure) in
                try MQTTPublisher.publish(url: url, topic: fullTopic, payload: payload, login: login)
            }
        } catch {
            throw AdminFailure(error.unreachable ? .unavailable : .failure, "cannot publish \(what): \(error)")
        }
    }
}

/// `rcadmin notify-stale`: tells devices their config is stale, now, without a publish.
enum NotifyCommand {
    static let notifyStale = AdminCommand(
        words: ["notify-stale"],
        synopsis: """
            [--mqtt URL] [--fcm] [--topic TOPIC] [--template-version N] [--device ID] [--activate-now]
                                    \(MQTTLogin.synopsis)
                                    [--service-account FILE] [--endpoint URL]
            """,
        help: """
            Sends the stale ping {"CONFIG_STATE":"STALE"[,"templateVersion":"N"]}, as data, so devices
            fetch. With --mqtt URL it is published at QoS 1 to TOPIC (default PUSH_RC; TOPIC/ID with
            --device) as {"data":{...}}, and the command waits for the broker's acknowledgement. With
            --fcm it is sent as an FCM HTTP v1 data message to the topic, with the service account:
            checked first as FCM checks it, then sent with apns-priority 5 and content-available (how
            a data-only message reaches iOS apps) and the topic as collapse key. Both may be given;
            one is required. --template-version N names the version that made configs stale, so a
            device that already has it does not fetch. --activate-now adds "activate":"now": devices
            activate what they fetch at once, outside their maintenance windows and holds (a kill
            switch that must not wait for a window).
            """,
        options: AdminCommand.accountOptions + PushDestinations.options + [
            .value("template-version", "N"), .flag("activate-now"),
        ],
        arguments: 0...0
    ) { options, environment throws(AdminFailure) in
        let notification = try PushDestinations(options)
        guard notification.isRequested else { throw .usage("notify-stale needs --mqtt URL, --fcm or both") }
        // Digits only: devices compare it as a number, and a "v42" would never match.
        let version = try options.integer("template-version", in: 0...Int64.max).map { String($0) }
        // MQTT alone needs no service account (the relay's hosts and lab brokers have none).
        let google = notification.fcm ? try GoogleContext(options, environment: environment) : nil
        try await notification.send(
            templateVersion: version, activateNow: options.flag("activate-now"), google: google)
    }
}
