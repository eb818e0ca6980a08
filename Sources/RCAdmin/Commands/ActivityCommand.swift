import Glibc
import RCCore
import RCGoogle

/// `rcadmin activity start|update|end`: builds one Live Activity message in the FCM HTTP v1 shape
/// from the command line, checks it with the validator the agent uses, and sends it to an iOS device
/// through FCM and/or to Linux devices over MQTT (or prints it with `--dry-run`).
enum ActivityCommand {
    static let options: [OptionSpec] =
        AdminCommand.accountOptions + PushDestinations.options + [
            .value("live-activity-token", "T"), .value("attributes-type", "NAME"), .value("attributes", "JSON"),
            .value("content-state", "JSON"), .value("alert-title", "TEXT"), .value("alert-body", "TEXT"),
            .value("timestamp", "SECS"), .value("dismissal-date", "SECS"), .value("stale-date", "SECS"),
            .value("priority", "5|10"), .value("fcm-token", "TOKEN"), .flag("dry-run"),
        ]

    static let start = command(
        .start,
        synopsis: "--live-activity-token T --attributes-type NAME --attributes JSON --content-state JSON",
        what: """
            Starts the activity T (its id on a Linux device, Apple's push-to-start token on iOS) with
            fixed attributes of type NAME and its first content state.
            """)
    static let update = command(
        .update, synopsis: "--live-activity-token T --content-state JSON",
        what: "Replaces the content state of the running activity T.")
    static let end = command(
        .end, synopsis: "--live-activity-token T [--content-state JSON] [--dismissal-date SECS]",
        what: """
            Ends the activity T, with a last content state if given. An ended activity stays listed
            until SECS (Unix seconds; 4 hours after the end without it, and never later, as on
            iPhones; a past date removes it at once).
            """)

    /// The three commands share everything but their event and the first lines of their help.
    private static func command(_ event: LiveActivityMessage.Event, synopsis: String, what: String) -> AdminCommand {
        AdminCommand(
            words: ["activity", event.rawValue],
            synopsis: """
                \(synopsis)
                [--alert-title TEXT --alert-body TEXT] [--timestamp SECS] [--stale-date SECS]
                [--priority 5|10] [--dry-run] [--fcm --fcm-token TOKEN]
                [--mqtt URL [--topic TOPIC] [--device ID]
                 \(MQTTLogin.synopsis)]
                [--service-account FILE] [--endpoint URL]
                """,
            help: """
                \(what)
                The message is the FCM HTTP v1 Live Activity message (apns.live_activity_token = T,
                apns-priority, apns.payload.aps with the event, timestamp, content-state, attributes,
                alert and dates), checked as the agent checks it before it goes anywhere. JSON options
                take a JSON object (--content-state at most 4096 bytes). --timestamp (Unix seconds,
                default now) orders the messages: a device ignores one not newer than the last it
                applied, so a second message within the same second needs an explicit, larger
                --timestamp (say the first one's plus 1). --stale-date shows the activity as stale
                after it. --priority 10 (default)
                delivers at once, 5 when convenient.
                With --fcm --fcm-token TOKEN it is sent to FCM (messages:send) for the iOS device with
                that registration token, with the service account; a start needs --alert-title and
                --alert-body there (iOS shows no push-to-start without an alert). With --mqtt URL it is published at
                QoS 1 to TOPIC (default PUSH_RC, the fleet; TOPIC/ID with --device) for Linux devices,
                without the FCM token, and the command waits for the broker's acknowledgement. Both may
                be given; one is required unless --dry-run prints the message instead of sending it.
                """,
            options: options,
            arguments: 0...0
        ) { options, environment throws(AdminFailure) in
            try await run(event, options, environment: environment)
        }
    }

    static func run(_ event: LiveActivityMessage.Event, _ options: ParsedOptions, environment: [String: String])
        async throws(AdminFailure)
    {
        // Everything is checked before anything is sent: a typo must not cost a token exchange,
        // let alone an activity that starts on one device and not on the other.
        let destinations = try PushDestinations(options)
        let fcmToken = options.value("fcm-token")
        if destinations.fcm != (fcmToken != nil) {
            throw .usage("--fcm and --fcm-token TOKEN go together (the iOS device's FCM registration token)")
        }
        // The FCM half addresses one device by token: --topic would be silently ignored without --mqtt.
        if destinations.mqtt == nil, options.value("topic") != nil {
            throw .usage("--topic goes with --mqtt URL (FCM sends an activity to --fcm-token)")
        }
        let dryRun = options.flag("dry-run")
        guard dryRun || destinations.isRequested else {
            throw .usage("activity \(event.rawValue) needs --fcm --fcm-token TOKEN, --mqtt URL or --dry-run")
        }
        let message = try Self.message(event, options, fcmToken: fcmToken)
        // iOS starts no Live Activity from a push-to-start without an alert (ActivityKit requires
        // one on a start; FCM passes the payload to APNs as it is). A Linux device needs none.
        if event == .start, destinations.fcm, message.alert == nil {
            throw .usage(
                "activity start --fcm needs --alert-title TEXT and --alert-body TEXT (iOS shows no push-to-start without an alert)"
            )
        }
        if dryRun {
            Output.data(Output.terminalSafeJSON(TemplateFile.prettyText(message.json)) + "\n")
            return
        }
        let google = destinations.fcm ? try GoogleContext(options, environment: environment) : nil
        let what = "the activity \(event.rawValue)"
        try await destinations.deliver(what) { target throws(AdminFailure) in
            switch target {
            case .fcm:
                guard let google else { throw .failure("no service account for FCM") }
                return try await sendFCM(message, api: google.fcm, what: what)
            case let .mqtt(url): return try await publish(message, url: url, to: destinations, what: what)
            }
        }
    }

    /// Sends `message` through FCM (`messages:send`) with its registration token. Returns what was done.
    static func sendFCM(_ message: LiveActivityMessage, api: FCMAPI, what: String) async throws(AdminFailure)
        -> String
    {
        let body = message.json["message"] ?? .object([])
        let name = try await GoogleContext.call { () async throws(GoogleError) in try await api.send(body) }
        return "sent \(what) of \(TextEscaping.terminal(message.token)) to FCM as \(TextEscaping.terminal(name))"
    }

    /// Publishes `message` to the MQTT topic of `destinations`, without the FCM token: a Linux
    /// device has none, and an iOS device's has no business on the broker. Returns what was done.
    static func publish(_ message: LiveActivityMessage, url: String, to destinations: PushDestinations, what: String)
        async throws(AdminFailure) -> String
    {
        var forDevices = message
        forDevices.fcmToken = nil
        try await destinations.publish(forDevices.json.compactText, url: url, what: what)
        return "published \(what) of \(TextEscaping.terminal(message.token)) to "
            + TextEscaping.terminal(destinations.mqttTopic)
    }

    /// The message the options describe, validated as the agent validates it. Every refusal is a
    /// usage error (64): each comes from an option's value, which the message names.
    static func message(_ event: LiveActivityMessage.Event, _ options: ParsedOptions, fcmToken: String?)
        throws(AdminFailure) -> LiveActivityMessage
    {
        guard let token = options.value("live-activity-token") else {
            throw .usage("activity \(event.rawValue) needs --live-activity-token T")
        }
        let title = options.value("alert-title")
        let body = options.value("alert-body")
        if (title == nil) != (body == nil) {
            throw .usage("--alert-title and --alert-body go together (a device shows no alert without both)")
        }
        let priority = try options.choice("priority", ["5", "10"]).map { $0 == "5" ? 5 : 10 } ?? 10
        let seconds = 0...LiveActivityMessage.maximumSeconds
        let timestamp = try options.integer("timestamp", in: seconds) ?? Int64(time(nil))
        let candidate = LiveActivityMessage(
            token: token, priority: priority, event: event, timestamp: timestamp,
            contentState: try object(options, "content-state"),
            attributesType: options.value("attributes-type"), attributes: try object(options, "attributes"),
            alert: title.flatMap { title in body.map { LiveActivityMessage.Alert(title: title, body: $0) } },
            dismissalDate: try options.integer("dismissal-date", in: seconds),
            staleDate: try options.integer("stale-date", in: seconds), fcmToken: fcmToken)
        do { return try candidate.validated() } catch { throw .usage(describe(error)) }
    }

    /// `--name JSON` as a JSON object, or `nil` when absent.
    static func object(_ options: ParsedOptions, _ name: String) throws(AdminFailure) -> JSONValue? {
        guard let text = options.value(name) else { return nil }
        let value: JSONValue
        do { value = try JSONValue.parse(Array(text.utf8)) } catch {
            throw .usage("--\(name) is not JSON: \(error)")
        }
        guard value.objectMembers != nil else {
            throw .usage("--\(name) must be a JSON object, got \(value.typeName)")
        }
        return value
    }

    /// Which option gives each member of `aps` (and the token): the validator names the field of
    /// the message, the operator typed an option.
    static let optionForField: [(field: String, option: String)] = [
        ("apns.live_activity_token", "--live-activity-token"), ("apns-priority", "--priority"),
        ("aps.content-state", "--content-state"), ("aps.attributes-type", "--attributes-type"),
        ("aps.attributes", "--attributes"), ("aps.alert", "--alert-title/--alert-body"),
        ("aps.timestamp", "--timestamp"), ("aps.dismissal-date", "--dismissal-date"),
        ("aps.stale-date", "--stale-date"), ("message.token", "--fcm-token"),
    ]

    /// The validator's refusal with the option it is about: "--content-state: bad message:
    /// message.apns.payload.aps.content-state: 5000 bytes, at most 4096".
    static func describe(_ error: MessageError) -> String {
        // Longest field first: `aps.attributes-type` must not be taken for `aps.attributes`.
        let match = optionForField.sorted { $0.field.count > $1.field.count }.first { entry in
            error.reason.contains(entry.field + ":") || error.reason.contains(entry.field + ".")
        }
        return match.map { "\($0.option): \(error.description)" } ?? error.description
    }
}
