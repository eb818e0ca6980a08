/// `watch`: the acknowledgement before the first event.
public struct WatchAck: ControlResponse {
    public init() {}

    public var members: [(key: String, value: JSONValue)] { [("watching", .bool(true))] }

    public init(reading response: ControlResponseReader) throws(ControlResponseError) {
        guard try response.bool("watching") else {
            throw ControlResponseError(field: response.field("watching"), "is false")
        }
    }
}

/// One line of a `watch` stream: `{"event":KIND,"at":ISO,fields...}`.
public struct WatchEvent: Sendable, Equatable {
    public var kind: String
    /// ISO 8601 UTC, to the second.
    public var at: String
    /// The event's own fields, in wire order (name order as the daemon writes them).
    public var fields: [(key: String, value: JSONValue)]

    public init(kind: String, at: String, fields: [(key: String, value: JSONValue)]) {
        self.kind = kind
        self.at = at
        self.fields = fields
    }

    public static func == (lhs: WatchEvent, rhs: WatchEvent) -> Bool {
        lhs.kind == rhs.kind && lhs.at == rhs.at && JSONValue.object(lhs.fields) == JSONValue.object(rhs.fields)
    }

    public var json: JSONValue { .object([("event", .string(kind)), ("at", .string(at))] + fields) }

    public static func parse(_ json: JSONValue) throws(ControlResponseError) -> WatchEvent {
        let reader = try ControlResponseReader(json)
        return WatchEvent(
            kind: try reader.string("event"), at: try reader.string("at"),
            fields: (json.objectMembers ?? []).filter { $0.key != "event" && $0.key != "at" })
    }
}
