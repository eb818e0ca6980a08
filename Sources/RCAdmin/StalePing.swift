import RCCore

/// The stale ping: the data message that tells devices their cached config is out of date
/// (`CONFIG_STATE=STALE`, the pattern Firebase documents for topic `PUSH_RC`), with the template
/// version that made it stale so a device that already has it does not fetch. One builder for the
/// MQTT payload and the FCM message, so `notify-stale` and the relay send the same thing.
enum StalePing {
    /// The data map. FCM data values are strings, so the version is one too. `activateNow` adds
    /// `"activate": "now"`: devices activate what the ping makes them fetch at once, outside their
    /// maintenance windows and holds (a kill switch).
    static func data(templateVersion: String?, activateNow: Bool = false) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [("CONFIG_STATE", .string("STALE"))]
        if let templateVersion { members.append(("templateVersion", .string(templateVersion))) }
        if activateNow { members.append(("activate", .string("now"))) }
        return .object(members)
    }

    /// What devices read from the MQTT topic: `{"data":{...}}`, the shape of an FCM data message.
    static func mqttPayload(templateVersion: String?, activateNow: Bool = false) -> String {
        JSONValue.object([("data", data(templateVersion: templateVersion, activateNow: activateNow))]).compactText
    }

    /// The FCM HTTP v1 message to `topic`. Data-only messages reach iOS only at `apns-priority: 5`
    /// with `content-available`; the collapse keys let a device that was offline get one ping, not
    /// one per publish it missed.
    static func fcmMessage(topic: String, templateVersion: String?, activateNow: Bool = false) -> JSONValue {
        .object([
            ("topic", .string(topic)),
            ("data", data(templateVersion: templateVersion, activateNow: activateNow)),
            ("android", .object([("collapse_key", .string(topic)), ("priority", .string("NORMAL"))])),
            (
                "apns",
                .object([
                    (
                        "headers",
                        .object([
                            ("apns-priority", .string("5")), ("apns-collapse-id", .string(String(topic.prefix(64)))),
                        ])
                    ),
                    ("payload", .object([("aps", .object([("content-available", .integer(1))]))])),
                ])
            ),
        ])
    }
}
