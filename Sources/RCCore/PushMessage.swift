/// An FCM-style message as the socket, MQTT and `rcagent notify` deliver it: `{"data": {...}}`
/// or a full HTTP v1 envelope `{"message": {"data": {...}, ...}}`, either of them possibly with an
/// `apns` block carrying a Live Activity.
public struct PushMessage: Sendable, Equatable {
    /// The data payload; FCM data values are strings, numbers and booleans are accepted as text.
    public var data: [String: String]
    /// The Live Activity the message carries (an `apns` block with a `live_activity_token` or an
    /// `aps.event`), or why it is not a valid one; `nil` when it carries none. A bad Live Activity
    /// does not refuse the whole message: its data (a `CONFIG_STATE` ping) still counts.
    public var liveActivity: Result<LiveActivityMessage, MessageError>?

    /// Any message whose data contains `CONFIG_STATE` marks the config stale.
    public var marksStale: Bool { data["CONFIG_STATE"] != nil }

    /// `"activate": "now"`: what this message brings is activated at once, past maintenance windows
    /// and holds (a kill switch must not wait).
    public var activatesNow: Bool { data["activate"] == "now" }

    /// The template version the message announces (`templateVersion` or Firebase realtime's
    /// `latestTemplateVersionNumber`), when it carries one.
    public var templateVersion: Int64? {
        (data["templateVersion"] ?? data["latestTemplateVersionNumber"]).flatMap { Int64($0) }
    }

    public init(data: [String: String], liveActivity: Result<LiveActivityMessage, MessageError>? = nil) {
        self.data = data
        self.liveActivity = liveActivity
    }

    public static func parse(_ json: JSONValue) throws(MessageError) -> PushMessage {
        guard json.objectMembers != nil else {
            throw MessageError("a message must be a JSON object, got \(json.typeName)")
        }
        let body: JSONValue
        let where_: String
        if let envelope = json["message"] {
            guard envelope.objectMembers != nil else {
                throw MessageError("\"message\" must be an object, got \(envelope.typeName)")
            }
            body = envelope
            where_ = "message.data"
        } else {
            body = json
            where_ = "data"
        }
        var data: [String: String] = [:]
        if let payload = body["data"] {
            guard let members = payload.objectMembers else {
                throw MessageError("\"\(where_)\" must be an object, got \(payload.typeName)")
            }
            for (key, value) in members {
                switch value {
                case .string, .integer, .double, .bool: data[key] = value.configText
                default: throw MessageError("\"\(where_).\(key)\" must be a string, got \(value.typeName)")
                }
            }
            if let version = data["templateVersion"] ?? data["latestTemplateVersionNumber"], Int64(version) == nil {
                throw MessageError("\"\(where_)\" template version must be a decimal number, got \"\(version)\"")
            }
        }
        guard body["data"] != nil || body["apns"] != nil else {
            throw MessageError("the message has neither \"data\" nor \"apns\"")
        }
        var liveActivity: Result<LiveActivityMessage, MessageError>?
        if LiveActivityMessage.isLiveActivity(body) {
            let path = json["message"] != nil ? "message." : ""
            liveActivity = Result { () throws(MessageError) in try LiveActivityMessage.parse(body: body, path: path) }
        }
        return PushMessage(data: data, liveActivity: liveActivity)
    }
}

public struct MessageError: Error, CustomStringConvertible, Sendable, Equatable {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { "bad message: \(reason)" }
}

/// FCM topic names: what FCM's v1 API accepts after `/topics/` (letters, digits and `-_.~%`),
/// checked before a name reaches a request or a config.
public enum FCMTopic {
    public static func isValid(_ name: String) -> Bool {
        !name.isEmpty
            && name.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
                    UInt8(ascii: "~"), UInt8(ascii: "%"):
                    true
                default: false
                }
            }
    }
}
