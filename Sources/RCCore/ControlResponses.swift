/// The daemon's answers on the control socket (docs/protocol.md), one type per op, shared by the
/// daemon (which encodes them with `json`) and the CLI (which decodes them with `parse`/`reply`), so
/// that neither side reads or writes a member by a string of its own.
///
/// Decoding is tolerant of members it does not know (a newer daemon may add some) and strict on the
/// types of those it does: a wrong type is a ``ControlResponseError`` naming the member.
public protocol ControlResponse: Sendable, Equatable {
    /// The members after `"ok":true`, in wire order.
    var members: [(key: String, value: JSONValue)] { get }
    /// Reads the members of an `ok` response.
    init(reading response: ControlResponseReader) throws(ControlResponseError)
}

extension ControlResponse {
    /// `{"ok":true, members...}`.
    public var json: JSONValue { .ok(members) }

    /// Decodes an `ok` response; an error response or a malformed one throws.
    public static func parse(_ json: JSONValue, at path: String = "") throws(ControlResponseError) -> Self {
        switch try reply(json, at: path) {
        case let .success(response): return response
        case let .failure(error):
            throw ControlResponseError(field: path.isEmpty ? "ok" : "\(path).ok", "is false (\(error.code): \(error))")
        }
    }

    /// Decodes either answer the daemon may give: this response, or a ``ControlError``.
    public static func reply(_ json: JSONValue, at path: String = "") throws(ControlResponseError) -> Result<
        Self, ControlError
    > {
        let reader = try ControlResponseReader(json, at: path)
        if try reader.bool("ok") {
            return .success(try Self(reading: reader))
        }
        return .failure(try ControlError(reading: reader))
    }
}

extension Result where Success: ControlResponse, Failure == ControlError {
    /// The response line for either outcome.
    public var json: JSONValue {
        switch self {
        case let .success(response): response.json
        case let .failure(error): error.json
        }
    }
}

/// A daemon answer that does not have the shape docs/protocol.md gives it.
public struct ControlResponseError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The member at fault, as a path (`fetch.changedKeys[2]`); empty for the response as a whole.
    public let field: String
    public let reason: String

    public init(field: String, _ reason: String) {
        self.field = field
        self.reason = reason
    }

    public var description: String {
        field.isEmpty ? "invalid response: \(reason)" : "invalid response: \"\(field)\" \(reason)"
    }
}

/// Typed access to the members of one response object; every error names the member's path.
public struct ControlResponseReader: Sendable {
    public let json: JSONValue
    /// Where this object sits in the response (`""` at the top, `fetch` for a message's fetch).
    public let path: String

    public init(_ json: JSONValue, at path: String = "") throws(ControlResponseError) {
        guard json.objectMembers != nil else {
            throw ControlResponseError(field: path, "must be a JSON object, got \(json.typeName)")
        }
        self.json = json
        self.path = path
    }

    /// The path of member `name`, for error messages.
    public func field(_ name: String) -> String { path.isEmpty ? name : "\(path).\(name)" }

    /// The member, `nil` when absent.
    public func value(_ name: String) -> JSONValue? { json[name] }

    private func mismatch(_ name: String, _ expected: String, _ got: JSONValue?) -> ControlResponseError {
        ControlResponseError(field: field(name), got.map { "must be \(expected), got \($0.typeName)" } ?? "is missing")
    }

    public func bool(_ name: String) throws(ControlResponseError) -> Bool {
        guard case let .bool(b)? = json[name] else { throw mismatch(name, "true or false", json[name]) }
        return b
    }

    public func integer(_ name: String) throws(ControlResponseError) -> Int64 {
        guard case let .integer(i)? = json[name] else { throw mismatch(name, "an integer", json[name]) }
        return i
    }

    public func string(_ name: String) throws(ControlResponseError) -> String {
        guard case let .string(s)? = json[name] else { throw mismatch(name, "a string", json[name]) }
        return s
    }

    /// A string, or `nil` when the member is absent or `null`.
    public func optionalString(_ name: String) throws(ControlResponseError) -> String? {
        switch json[name] {
        case nil, .null?: return nil
        case let .string(s)?: return s
        case let other?: throw mismatch(name, "a string or null", other)
        }
    }

    public func strings(_ name: String) throws(ControlResponseError) -> [String] {
        guard case let .array(items)? = json[name] else { throw mismatch(name, "an array of strings", json[name]) }
        var strings: [String] = []
        strings.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            guard case let .string(s) = item else {
                throw ControlResponseError(field: "\(field(name))[\(index)]", "must be a string, got \(item.typeName)")
            }
            strings.append(s)
        }
        return strings
    }
}

extension ControlError {
    /// Reads `{"ok":false,"error":{"code":"...","message":"..."}}`. A code this side does not know is
    /// kept as it is: a newer daemon may say more precisely what failed.
    public init(reading response: ControlResponseReader) throws(ControlResponseError) {
        guard let error = response.value("error") else {
            throw ControlResponseError(field: response.field("error"), "is missing")
        }
        let reader = try ControlResponseReader(error, at: response.field("error"))
        self.init(Code(rawValue: try reader.string("code")), try reader.string("message"))
    }

    /// Decodes an error response.
    public static func parse(_ json: JSONValue, at path: String = "") throws(ControlResponseError) -> ControlError {
        let reader = try ControlResponseReader(json, at: path)
        guard try !reader.bool("ok") else { throw ControlResponseError(field: reader.field("ok"), "is true") }
        return try ControlError(reading: reader)
    }
}

/// `ping`: the daemon's pid.
public struct PingResponse: ControlResponse {
    public var pid: Int64

    public init(pid: Int64) { self.pid = pid }

    public var members: [(key: String, value: JSONValue)] { [("pid", .integer(pid))] }

    public init(reading response: ControlResponseReader) throws(ControlResponseError) {
        pid = try response.integer("pid")
    }
}

/// `status`: the daemon's own view (the CLI adds the store's).
public struct StatusResponse: ControlResponse {
    public var pid: Int64
    /// `idle` or `fetching`.
    public var state: String
    /// ISO 8601 UTC, `nil` when no fetch is planned (no source configured).
    public var nextFetchAt: String?
    /// What the push channel is doing, `nil` without one.
    public var push: String?
    /// ``AgentConfig/digest`` of the config the daemon runs with (`nil` from an older daemon).
    public var config: String?
    /// What the device report is doing (`[Report] MQTTStatusTopic=`), `nil` without one.
    public var report: String?

    public init(
        pid: Int64, state: String, nextFetchAt: String?, push: String?, config: String?, report: String? = nil
    ) {
        self.pid = pid
        self.state = state
        self.nextFetchAt = nextFetchAt
        self.push = push
        self.config = config
        self.report = report
    }

    public var members: [(key: String, value: JSONValue)] {
        [
            ("pid", .integer(pid)), ("state", .string(state)), ("nextFetchAt", .optional(nextFetchAt)),
            ("push", .optional(push)), ("config", .optional(config)), ("report", .optional(report)),
        ]
    }

    public init(reading response: ControlResponseReader) throws(ControlResponseError) {
        pid = try response.integer("pid")
        state = try response.string("state")
        nextFetchAt = try response.optionalString("nextFetchAt")
        push = try response.optionalString("push")
        config = try response.optionalString("config")
        report = try response.optionalString("report")
    }
}

/// `fetch` (and the `fetch` member of a `message` answer with `wait`). A refused or failed fetch is
/// a ``ControlError`` (`throttled`, `fetch-failed`, `shutting-down`).
public enum FetchResponse: ControlResponse {
    /// Without `wait`: the fetch was requested.
    case requested
    /// A new template was fetched; `changedKeys` is `nil` when it was not activated.
    case updated(templateVersion: String?, changedKeys: [String]?)
    case noChange
    /// Not fetched (not due, or backing off), and when the next fetch is planned.
    case skipped(reason: String, nextFetchAt: String?)

    public var members: [(key: String, value: JSONValue)] {
        switch self {
        case .requested:
            return [("outcome", .string("requested"))]
        case let .updated(templateVersion, changedKeys):
            var members: [(key: String, value: JSONValue)] = [
                ("outcome", .string("updated")), ("templateVersion", .optional(templateVersion)),
                ("activated", .bool(changedKeys != nil)),
            ]
            if let changedKeys { members.append(("changedKeys", .array(changedKeys.map(JSONValue.string)))) }
            return members
        case .noChange:
            return [("outcome", .string("no-change"))]
        case let .skipped(reason, nextFetchAt):
            return [
                ("outcome", .string("skipped")), ("reason", .string(reason)), ("nextFetchAt", .optional(nextFetchAt)),
            ]
        }
    }

    public init(reading response: ControlResponseReader) throws(ControlResponseError) {
        let outcome = try response.string("outcome")
        switch outcome {
        case "requested": self = .requested
        case "updated":
            let activated = try response.bool("activated")
            self = .updated(
                templateVersion: try response.optionalString("templateVersion"),
                changedKeys: activated ? try response.strings("changedKeys") : nil)
        case "no-change": self = .noChange
        case "skipped":
            self = .skipped(
                reason: try response.string("reason"), nextFetchAt: try response.optionalString("nextFetchAt"))
        default:
            throw ControlResponseError(field: response.field("outcome"), "names no outcome (\"\(outcome)\")")
        }
    }
}

/// `activate`.
public enum ActivateResponse: ControlResponse {
    /// No fetched template was waiting.
    case nothingToActivate
    case activated(templateVersion: String?, changedKeys: [String])

    public var members: [(key: String, value: JSONValue)] {
        switch self {
        case .nothingToActivate:
            [("activated", .bool(false)), ("changedKeys", .array([]))]
        case let .activated(templateVersion, changedKeys):
            [
                ("activated", .bool(true)), ("templateVersion", .optional(templateVersion)),
                ("changedKeys", .array(changedKeys.map(JSONValue.string))),
            ]
        }
    }

    public init(reading response: ControlResponseReader) throws(ControlResponseError) {
        let changedKeys = try response.strings("changedKeys")
        guard try response.bool("activated") else {
            self = .nothingToActivate
            return
        }
        self = .activated(templateVersion: try response.optionalString("templateVersion"), changedKeys: changedKeys)
    }
}

/// `mark-stale`: the flag is set; `newlySet` says whether it was clear before.
public struct MarkStaleResponse: ControlResponse {
    public var newlySet: Bool

    public init(newlySet: Bool) { self.newlySet = newlySet }

    public var members: [(key: String, value: JSONValue)] { [("stale", .bool(true)), ("newlySet", .bool(newlySet))] }

    public init(reading response: ControlResponseReader) throws(ControlResponseError) {
        guard try response.bool("stale") else {
            throw ControlResponseError(field: response.field("stale"), "is false in a mark-stale answer")
        }
        newlySet = try response.bool("newlySet")
    }
}

/// `reload`: the config was re-read and applied. `changed` names the settings that differ
/// (`Section.Key`, `Signals.<name>`), `restartNeeded` those among them a running daemon cannot
/// take (they apply at the next start), `warnings` what the files hold that the agent ignores.
public struct ReloadResponse: ControlResponse {
    public var changed: [String]
    public var restartNeeded: [String]
    public var warnings: [String]

    public init(changed: [String], restartNeeded: [String], warnings: [String]) {
        self.changed = changed
        self.restartNeeded = restartNeeded
        self.warnings = warnings
    }

    public var members: [(key: String, value: JSONValue)] {
        [
            ("changed", .array(changed.map(JSONValue.string))),
            ("restartNeeded", .array(restartNeeded.map(JSONValue.string))),
            ("warnings", .array(warnings.map(JSONValue.string))),
        ]
    }

    public init(reading response: ControlResponseReader) throws(ControlResponseError) {
        changed = try response.strings("changed")
        restartNeeded = try response.strings("restartNeeded")
        warnings = try response.strings("warnings")
    }
}

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

extension JSONValue {
    /// A string, or `null` for `nil`.
    static func optional(_ s: String?) -> JSONValue { s.map(JSONValue.string) ?? .null }
}
