import RCCore

/// The FCM HTTP v1 send API for one project: `POST /v1/projects/{p}/messages:send` with
/// `{"message": …}`, answered by the message's name. Every message is first checked here against
/// the rules FCM documents (one target, string data, reserved keys, size limits, topic names), so a
/// malformed one fails before it is sent, with the field it is about.
public struct FCMAPI: Sendable {
    public let api: GoogleAPI
    public let project: String
    /// `scheme://host[:port]` the calls go to.
    public let origin: String

    public static let defaultOrigin = "https://fcm.googleapis.com"

    /// `endpoint`: a URL whose scheme, host and port replace Google's (`--endpoint`), or `nil`.
    public init(api: GoogleAPI, project: String, endpoint: String? = nil) {
        self.api = api
        self.project = project
        origin = GoogleEndpoint.origin(endpoint, default: Self.defaultOrigin)
    }

    var sendURL: String { "\(origin)/v1/projects/\(TextEscaping.percentEncoded(project))/messages:send" }

    /// Sends `message` (an FCM v1 `Message`), or with `validateOnly` has FCM check it without
    /// delivering it. Returns the name FCM gave it (`projects/{p}/messages/{id}`).
    public func send(_ message: JSONValue, validateOnly: Bool = false) async throws(GoogleError) -> String {
        let call = validateOnly ? "FCM: validate a message" : "FCM: send a message"
        try Self.validate(message, call: call)
        var body: [(key: String, value: JSONValue)] = [("message", message)]
        if validateOnly { body.append(("validate_only", .bool(true))) }
        let (answer, _) = try await api.json("POST", sendURL, body: .object(body), call: call)
        guard let name = answer["name"]?.stringValue, !name.isEmpty else {
            throw GoogleError(call, "the answer has no message \"name\"")
        }
        return name
    }

    /// Checks `message` as ``validate(_:call:)`` does (an instance's spelling of it).
    public func validate(_ message: JSONValue) throws(GoogleError) {
        try Self.validate(message, call: "FCM: check a message")
    }

    /// The members a v1 `Message` may have; FCM refuses others ("Unknown name").
    static let messageFields: Set<String> = [
        "name", "data", "notification", "android", "webpush", "apns", "fcm_options", "fcmOptions", "token", "topic",
        "condition",
    ]
    static let targets = ["token", "topic", "condition"]
    /// The payload limits FCM documents: data keys and values plus notification texts, in bytes.
    static let tokenPayloadLimit = 4096
    static let topicPayloadLimit = 2048

    /// Checks `message` locally the way FCM does before it accepts one: an object of known fields;
    /// exactly one target (`token`, `topic` or `condition`) as a non-empty string; a topic name of
    /// `[a-zA-Z0-9-_.~%]+` without `/topics/`; a condition naming 1 to 5 topics; `data` (and
    /// `android.data`) an object of strings whose keys are not reserved (`from`, `message_type`,
    /// `google…`, `gcm…`); `notification` strings; and data plus notification within 4,096 bytes for
    /// a token, 2,048 for a topic or condition. `call` names what is checked in the error.
    public static func validate(_ message: JSONValue, call: String = "FCM: check a message") throws(GoogleError) {
        func refuse(_ field: String, _ why: String) -> GoogleError { GoogleError(call, "\(field): \(why)") }
        guard let members = message.objectMembers else {
            throw refuse("message", "a message is a JSON object, not \(message.typeName)")
        }
        if let unknown = members.first(where: { !messageFields.contains($0.key) }) {
            throw refuse("message.\(TextEscaping.snippet(unknown.key, maxBytes: 64))", "not a field of an FCM message")
        }
        let present = targets.filter { message[$0] != nil }
        guard present.count == 1, let target = present.first else {
            throw refuse(
                "message",
                present.isEmpty
                    ? "no target: it needs one of token, topic or condition"
                    : "more than one target (\(present.joined(separator: ", "))): exactly one of token, topic or condition"
            )
        }
        guard let address = message[target]?.stringValue, !address.isEmpty else {
            throw refuse("message.\(target)", "must be a non-empty string")
        }
        switch target {
        case "topic": if let why = topicProblem(address) { throw refuse("message.topic", why) }
        case "condition":
            let topics = conditionTopics(address)
            guard (1...5).contains(topics.count) else {
                throw refuse("message.condition", "must name 1 to 5 topics as 'name' in topics, not \(topics.count)")
            }
            if let why = topics.lazy.compactMap(topicProblem).first { throw refuse("message.condition", why) }
        default: break
        }
        var size = 0
        if let data = message["data"] { size += try stringMap(data, "message.data", dataKeys: true, refuse) }
        if let notification = message["notification"] {
            if let other = notification.objectMembers?.first(where: { !["title", "body", "image"].contains($0.key) }) {
                throw refuse(
                    "message.notification.\(TextEscaping.snippet(other.key, maxBytes: 64))",
                    "not a field of a notification (title, body, image)")
            }
            size += try stringMap(notification, "message.notification", dataKeys: false, refuse)
        }
        if let android = message["android"] {
            guard android.objectMembers != nil else { throw refuse("message.android", "must be an object") }
            if let data = android["data"] { _ = try stringMap(data, "message.android.data", dataKeys: true, refuse) }
        }
        let limit = target == "token" ? tokenPayloadLimit : topicPayloadLimit
        guard size <= limit else {
            throw refuse(
                "message",
                "too big: data and notification hold \(size) bytes, FCM takes at most \(limit) for a "
                    + "message to a \(target == "token" ? "token" : "topic")")
        }
    }

    /// Why `name` is not a topic name FCM takes, or `nil`.
    static func topicProblem(_ name: String) -> String? {
        if name.hasPrefix("/topics/") { return "give the bare topic name, without /topics/" }
        let allowed = name.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || "-_.~%".utf8.contains(byte)
        }
        return allowed && !name.isEmpty
            ? nil : "the topic name \"\(TextEscaping.snippet(name, maxBytes: 64))\" is not [a-zA-Z0-9-_.~%]+"
    }

    /// The topics a condition names: each `'name' in topics`.
    static func conditionTopics(_ condition: String) -> [String] {
        let pieces = condition.split(separator: "'", omittingEmptySubsequences: false)
        // Quoted names are the odd pieces; one counts when the text after it is `in topics`.
        return stride(from: 1, to: pieces.count - 1, by: 2).compactMap { index in
            let after = pieces[index + 1].split(whereSeparator: { $0 == " " || $0 == "\t" })
            return after.count >= 2 && after[0] == "in" && after[1].hasPrefix("topics") ? String(pieces[index]) : nil
        }
    }

    /// Checks that `value` is an object of strings (with `dataKeys`, none of them reserved) and
    /// returns the bytes its keys (data only) and values hold.
    private static func stringMap(
        _ value: JSONValue, _ field: String, dataKeys: Bool, _ refuse: (String, String) -> GoogleError
    ) throws(GoogleError) -> Int {
        guard let members = value.objectMembers else {
            throw refuse(field, "must be an object of strings, not \(value.typeName)")
        }
        var size = 0
        for (key, item) in members {
            let shown = "\(field)[\(TextEscaping.snippet(key, maxBytes: 64))]"
            guard let text = item.stringValue else {
                throw refuse(shown, "values must be strings (FCM carries text only), not \(item.typeName)")
            }
            if dataKeys {
                let lowered = key.lowercased()
                if key == "from" || key == "message_type" || lowered.hasPrefix("google") || lowered.hasPrefix("gcm") {
                    throw refuse(shown, "a reserved key (from, message_type and keys starting with google or gcm)")
                }
                size += key.utf8.count
            }
            size += text.utf8.count
        }
        return size
    }
}
