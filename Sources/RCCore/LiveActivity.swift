/// A Live Activity message in the FCM HTTP v1 shape, parsed and validated: what an operator sends
/// to start, update or end an activity, whether it travels to an iOS device through FCM or to a
/// Linux device over MQTT or the control socket.
///
/// ```
/// {"message": {"token": "<fcm token>", "apns": {
///     "live_activity_token": "<activity id>", "headers": {"apns-priority": "10"},
///     "payload": {"aps": {"timestamp": 1700000000, "event": "start", "content-state": {...},
///         "attributes-type": "DemoAttributes", "attributes": {...},
///         "alert": {"title": "...", "body": "..."}, "stale-date": ..., "dismissal-date": ...}}}}}
/// ```
///
/// The agent and rcadmin validate with the same ``parse(_:)``: a message rcadmin builds is one the
/// agent accepts. Every refusal names the field's path (`message.apns.payload.aps.event: ...`) and
/// quotes offending text escaped, so it can go to a terminal or a log line as it is.
public struct LiveActivityMessage: Sendable, Equatable {
    /// What the message does to the activity (`aps.event`).
    public enum Event: String, Sendable, CaseIterable {
        case start, update, end
    }

    /// The visible alert that comes with the message (`aps.alert`).
    public struct Alert: Sendable, Equatable {
        public var title: String
        public var body: String
        /// A sound name; `nil` plays none.
        public var sound: String?

        public init(title: String, body: String, sound: String? = nil) {
            self.title = title
            self.body = body
            self.sound = sound
        }

        /// `{"title", "body"[, "sound"]}`.
        public var json: JSONValue {
            var members: [(key: String, value: JSONValue)] = [("body", .string(body))]
            if let sound { members.append(("sound", .string(sound))) }
            members.append(("title", .string(title)))
            return .object(members)
        }
    }

    /// The activity's id: `apns.live_activity_token`. It becomes a database key, a word in log
    /// lines and a hook's environment value, hence printable ASCII without spaces, bounded.
    public var token: String
    /// `apns.headers.apns-priority`: 10 delivers at once (and spends Apple's budget), 5 when convenient.
    public var priority: Int
    public var event: Event
    /// When the sender produced the data, in Unix seconds: a message not newer than the last one
    /// applied is ignored.
    public var timestamp: Int64
    /// The activity's dynamic content (`aps.content-state`), a JSON object. Required on start and
    /// update; `nil` only on an end that keeps the last content.
    public var contentState: JSONValue?
    /// The name of the activity's attributes type (`aps.attributes-type`); start only.
    public var attributesType: String?
    /// The activity's fixed attributes (`aps.attributes`), a JSON object; start only.
    public var attributes: JSONValue?
    public var alert: Alert?
    /// Unix seconds; on end, when the ended activity is removed (4 h after the end without it).
    public var dismissalDate: Int64?
    /// Unix seconds after which the content is out of date.
    public var staleDate: Int64?
    /// `aps.relevance-score`: ranks concurrent activities; kept so the message rebuilds whole.
    public var relevanceScore: Double?
    /// `message.token`: the FCM registration token of an iOS device, when the message is for FCM.
    public var fcmToken: String?

    /// Apple's limit on the content state's size (ActivityKit: "can't exceed 4KB"), on its compact JSON.
    public static let maximumContentStateBytes = 4_096
    /// The same bound for the attributes: they ride in the same 4 KB APNs payload.
    public static let maximumAttributesBytes = 4_096
    /// Longest accepted activity token. APNs push tokens are 64 to 200 hex digits; this leaves room
    /// for ids chosen by operators of Linux devices while keeping log lines and keys short.
    public static let maximumTokenBytes = 256
    /// Longest alert title, body or sound name, and attributes type name, in UTF-8 bytes.
    public static let maximumTextBytes = 1_024
    /// APNs' limit on a notification's payload (`apns.payload`, serialized), Live Activities included.
    public static let maximumPayloadBytes = 4_096
    /// 9999-12-31T23:59:59Z: a date past it is a mistake (milliseconds sent as seconds, say).
    public static let maximumSeconds: Int64 = 253_402_300_799

    public init(
        token: String, priority: Int = 10, event: Event, timestamp: Int64, contentState: JSONValue?,
        attributesType: String? = nil, attributes: JSONValue? = nil, alert: Alert? = nil,
        dismissalDate: Int64? = nil, staleDate: Int64? = nil, relevanceScore: Double? = nil, fcmToken: String? = nil
    ) {
        self.token = token
        self.priority = priority
        self.event = event
        self.timestamp = timestamp
        self.contentState = contentState
        self.attributesType = attributesType
        self.attributes = attributes
        self.alert = alert
        self.dismissalDate = dismissalDate
        self.staleDate = staleDate
        self.relevanceScore = relevanceScore
        self.fcmToken = fcmToken
    }

    /// Whether `body` (a message, inside its `message` envelope or not) carries a Live Activity:
    /// its `apns` block has a `live_activity_token` or an `aps.event`. A data message's `apns`
    /// block (priority 5 and `content-available`, as the stale ping sends) is not one.
    static func isLiveActivity(_ body: JSONValue) -> Bool {
        guard let apns = body["apns"] else { return false }
        return apns["live_activity_token"] != nil || apns["payload"]?["aps"]?["event"] != nil
    }

    /// Parses and validates a Live Activity message: `{"message": {..., "apns": {...}}}` or the
    /// same without the envelope, as ``PushMessage`` accepts them.
    public static func parse(_ json: JSONValue) throws(MessageError) -> LiveActivityMessage {
        guard json.objectMembers != nil else {
            throw MessageError("a message must be a JSON object, got \(json.typeName)")
        }
        if let envelope = json["message"] {
            guard envelope.objectMembers != nil else {
                throw MessageError("message: must be an object, got \(envelope.typeName)")
            }
            return try parse(body: envelope, path: "message.")
        }
        return try parse(body: json, path: "")
    }

    /// Parses the message body (inside the envelope); `path` prefixes every field path in errors.
    static func parse(body: JSONValue, path: String) throws(MessageError) -> LiveActivityMessage {
        var reader = FieldReader(prefix: path)
        let fcmToken = try reader.string(body, "token", maxBytes: maximumTokenBytes * 4)
        let apns = try reader.object(body, "apns", required: true) ?? .object([])
        reader.prefix = path + "apns."
        guard let token = try reader.string(apns, "live_activity_token", maxBytes: maximumTokenBytes) else {
            throw reader.missing("live_activity_token")
        }
        if let bad = token.unicodeScalars.first(where: { !(0x21...0x7e).contains($0.value) }) {
            throw reader.error(
                "live_activity_token",
                "must be printable ASCII without spaces, got \(quoted(token)) (U+\(hex(bad.value)))")
        }
        if token.isEmpty { throw reader.error("live_activity_token", "must not be empty") }
        var priority = 10
        if let headers = try reader.object(apns, "headers") {
            reader.prefix = path + "apns.headers."
            if let text = try reader.string(headers, "apns-priority", maxBytes: 16) {
                guard text == "5" || text == "10" else {
                    throw reader.error("apns-priority", "must be \"5\" or \"10\", got \(quoted(text))")
                }
                priority = text == "5" ? 5 : 10
            }
        }
        reader.prefix = path + "apns."
        let payload = try reader.object(apns, "payload", required: true) ?? .object([])
        reader.prefix = path + "apns.payload."
        let aps = try reader.object(payload, "aps", required: true) ?? .object([])
        reader.prefix = path + "apns.payload.aps."
        // Members the device does not use (`sound`, `input-push-token`, whatever Apple adds) are accepted
        // and ignored: a backend sends Linux devices the very payload it sends to iPhones.
        guard let eventText = try reader.string(aps, "event", maxBytes: 16) else { throw reader.missing("event") }
        guard let event = Event(rawValue: eventText) else {
            throw reader.error("event", "must be start, update or end, got \(quoted(eventText))")
        }
        guard let timestamp = try reader.seconds(aps, "timestamp") else { throw reader.missing("timestamp") }
        let contentState = try reader.object(aps, "content-state", required: event != .end)
        if let contentState {
            let size = contentState.compactText.utf8.count
            if size > maximumContentStateBytes {
                throw reader.error("content-state", "\(size) bytes, at most \(maximumContentStateBytes)")
            }
        }
        let attributesType = try reader.string(aps, "attributes-type", maxBytes: maximumTextBytes)
        let attributes = try reader.object(aps, "attributes")
        switch event {
        case .start:
            guard let attributesType else { throw reader.error("attributes-type", "required on start") }
            if attributesType.isEmpty { throw reader.error("attributes-type", "must not be empty") }
            guard let attributes else { throw reader.error("attributes", "required on start") }
            let size = attributes.compactText.utf8.count
            if size > maximumAttributesBytes {
                throw reader.error("attributes", "\(size) bytes, at most \(maximumAttributesBytes)")
            }
        case .update, .end:
            // Attributes are fixed when an activity starts (ActivityKit cannot change them).
            if attributesType != nil { throw reader.error("attributes-type", "only a start carries it") }
            if attributes != nil { throw reader.error("attributes", "only a start carries them") }
        }
        // Then the whole: APNs' limit is on the payload (`aps` and anything beside it) as the sender
        // serializes it; its compact form here is the least a device gets.
        let payloadSize = payload.compactText.utf8.count
        if payloadSize > maximumPayloadBytes {
            throw MessageError(
                "\(path)apns.payload: \(payloadSize) bytes, at most \(maximumPayloadBytes) (the APNs payload limit)")
        }
        let alert = try Self.alert(aps, reader: reader)
        let dismissalDate = try reader.seconds(aps, "dismissal-date")
        if dismissalDate != nil, event != .end {
            throw reader.error("dismissal-date", "only an end carries it")
        }
        let staleDate = try reader.seconds(aps, "stale-date")
        // Used by iPhones only (it ranks concurrent activities): kept when it is a number so the message
        // rebuilds whole, ignored otherwise, as any member the device does not use.
        var relevanceScore: Double?
        switch aps["relevance-score"] {
        case let .integer(i)?: relevanceScore = Double(i)
        case let .double(d)? where d.isFinite: relevanceScore = d
        default: relevanceScore = nil
        }
        return LiveActivityMessage(
            token: token, priority: priority, event: event, timestamp: timestamp, contentState: contentState,
            attributesType: attributesType, attributes: attributes, alert: alert, dismissalDate: dismissalDate,
            staleDate: staleDate, relevanceScore: relevanceScore, fcmToken: fcmToken)
    }

    /// This message checked as the agent will check it: what rcadmin calls on a message it built
    /// before sending it anywhere. Returns the message as the agent will read it.
    public func validated() throws(MessageError) -> LiveActivityMessage {
        try Self.parse(json)
    }

    /// The canonical FCM HTTP v1 message: `{"message": {["token",] "apns": {...}}}`, what rcadmin
    /// sends. Parsing it gives this message back.
    public var json: JSONValue {
        var aps: [(key: String, value: JSONValue)] = []
        if let alert { aps.append(("alert", alert.json)) }
        if let attributes { aps.append(("attributes", attributes)) }
        if let attributesType { aps.append(("attributes-type", .string(attributesType))) }
        if let contentState { aps.append(("content-state", contentState)) }
        if let dismissalDate { aps.append(("dismissal-date", .integer(dismissalDate))) }
        aps.append(("event", .string(event.rawValue)))
        if let relevanceScore {
            aps.append(
                (
                    "relevance-score",
                    relevanceScore == relevanceScore.rounded() && abs(relevanceScore) < 1e15
                        ? .integer(Int64(relevanceScore)) : .double(relevanceScore)
                ))
        }
        if let staleDate { aps.append(("stale-date", .integer(staleDate))) }
        aps.append(("timestamp", .integer(timestamp)))
        let apns: JSONValue = .object([
            ("headers", .object([("apns-priority", .string(String(priority)))])),
            ("live_activity_token", .string(token)),
            ("payload", .object([("aps", .object(aps))])),
        ])
        var message: [(key: String, value: JSONValue)] = [("apns", apns)]
        if let fcmToken { message.append(("token", .string(fcmToken))) }
        return .object([("message", .object(message))])
    }

    /// Text from a message quoted into an error: cut short and escaped for a terminal or a log.
    static func quoted(_ text: String) -> String { "\"" + TextEscaping.snippet(text, maxBytes: 64) + "\"" }

    static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}

/// Reads typed members of one JSON object, naming `prefix + key` in every error.
struct FieldReader {
    var prefix: String

    func error(_ key: String, _ reason: String) -> MessageError {
        MessageError("\(prefix)\(TextEscaping.snippet(key, maxBytes: 64)): \(reason)")
    }

    func missing(_ key: String) -> MessageError { error(key, "missing") }

    func object(_ container: JSONValue, _ key: String, required: Bool = false) throws(MessageError) -> JSONValue? {
        guard let value = container[key] else {
            if required { throw missing(key) }
            return nil
        }
        guard value.objectMembers != nil else { throw error(key, "must be an object, got \(value.typeName)") }
        return value
    }

    func string(_ container: JSONValue, _ key: String, maxBytes: Int) throws(MessageError) -> String? {
        guard let value = container[key] else { return nil }
        guard let text = value.stringValue else { throw error(key, "must be a string, got \(value.typeName)") }
        if text.utf8.count > maxBytes { throw error(key, "\(text.utf8.count) bytes, at most \(maxBytes)") }
        return text
    }

    /// Unix seconds: a whole number from 0 to the end of year 9999. `1.0` is accepted (some JSON
    /// writers emit integral doubles); `1.5` is not.
    func seconds(_ container: JSONValue, _ key: String) throws(MessageError) -> Int64? {
        guard let value = container[key] else { return nil }
        let seconds: Int64
        switch value {
        case let .integer(i): seconds = i
        case let .double(d):
            guard d.isFinite, d == d.rounded() else {
                throw error(key, "must be whole seconds, got \(JSONValue.format(d))")
            }
            if d < 0 { throw error(key, "must not be negative, got \(JSONValue.format(d))") }
            guard d <= Double(LiveActivityMessage.maximumSeconds) else {
                throw error(key, "\(JSONValue.format(d)) is after year 9999 (milliseconds instead of seconds?)")
            }
            seconds = Int64(d)
        default: throw error(key, "must be a number of seconds, got \(value.typeName)")
        }
        if seconds < 0 { throw error(key, "must not be negative, got \(seconds)") }
        if seconds > LiveActivityMessage.maximumSeconds {
            throw error(key, "\(seconds) is after year 9999 (milliseconds instead of seconds?)")
        }
        return seconds
    }
}
