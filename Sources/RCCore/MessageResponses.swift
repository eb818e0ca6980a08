/// `message`: what the message did to the config (ignored with why, or marked stale and, with
/// `wait`, what the fetch came to) and, when it carries a Live Activity, what became of that.
/// A Live Activity the agent refuses is not here: the whole answer is then an error.
public struct MessageResponse: ControlResponse {
    /// The config part of the answer (`CONFIG_STATE`).
    public enum Stale: Sendable, Equatable {
        case ignored(String)
        case markedStale(newlySet: Bool, fetch: Result<FetchResponse, ControlError>?)
    }

    public var stale: Stale
    public var activity: ActivityResult?

    public init(stale: Stale, activity: ActivityResult? = nil) {
        self.stale = stale
        self.activity = activity
    }

    /// A message that did not touch the config.
    public static func ignored(_ why: String, activity: ActivityResult? = nil) -> MessageResponse {
        MessageResponse(stale: .ignored(why), activity: activity)
    }

    public static func markedStale(
        newlySet: Bool, fetch: Result<FetchResponse, ControlError>?, activity: ActivityResult? = nil
    ) -> MessageResponse {
        MessageResponse(stale: .markedStale(newlySet: newlySet, fetch: fetch), activity: activity)
    }

    public var members: [(key: String, value: JSONValue)] {
        var members: [(key: String, value: JSONValue)]
        switch stale {
        case let .ignored(why):
            members = [("stale", .bool(false)), ("ignored", .string(why))]
        case let .markedStale(newlySet, fetch):
            members = [("stale", .bool(true)), ("newlySet", .bool(newlySet))]
            if let fetch { members.append(("fetch", fetch.json)) }
        }
        if let activity { members.append(("activity", activity.json)) }
        return members
    }

    public init(reading response: ControlResponseReader) throws(ControlResponseError) {
        activity = try response.value("activity").map { json throws(ControlResponseError) in
            try ActivityResult(reading: ControlResponseReader(json, at: response.field("activity")))
        }
        guard try response.bool("stale") else {
            stale = .ignored(try response.string("ignored"))
            return
        }
        let fetch = try response.value("fetch").map { json throws(ControlResponseError) in
            try FetchResponse.reply(json, at: response.field("fetch"))
        }
        stale = .markedStale(newlySet: try response.bool("newlySet"), fetch: fetch)
    }
}

/// What a Live Activity message did, in a `message` answer:
/// `{"outcome": "started"|"updated"|"ended"|"removed"|"ignored", "id", "reason"?, "activity"?}`.
/// `activity` is the activity after the change (as `rcagent activity show --json` prints it);
/// `reason` says why an ignored message changed nothing.
public struct ActivityResult: Sendable, Equatable {
    public enum Outcome: String, Sendable, CaseIterable {
        case started, updated, ended, removed, ignored
    }

    public var outcome: Outcome
    public var id: String
    public var reason: String?
    public var activity: JSONValue?

    public init(outcome: Outcome, id: String, reason: String? = nil, activity: JSONValue? = nil) {
        self.outcome = outcome
        self.id = id
        self.reason = reason
        self.activity = activity
    }

    public var json: JSONValue {
        var members: [(key: String, value: JSONValue)] = [("outcome", .string(outcome.rawValue)), ("id", .string(id))]
        if let reason { members.append(("reason", .string(reason))) }
        if let activity { members.append(("activity", activity)) }
        return .object(members)
    }

    public init(reading reader: ControlResponseReader) throws(ControlResponseError) {
        let text = try reader.string("outcome")
        guard let outcome = Outcome(rawValue: text) else {
            throw ControlResponseError(
                field: reader.field("outcome"),
                "must be one of \(Outcome.allCases.map(\.rawValue).joined(separator: ", ")), got \"\(TextEscaping.snippet(text, maxBytes: 32))\""
            )
        }
        self.outcome = outcome
        id = try reader.string("id")
        reason = try reader.optionalString("reason")
        activity = reader.value("activity")
    }
}
