/// `fetch` (and the `fetch` member of a `message` answer with `wait`). A refused or failed fetch is
/// a ``ControlError`` (`throttled`, `fetch-failed`, `shutting-down`).
public enum FetchResponse: ControlResponse {
    /// Without `wait`: the fetch was requested.
    case requested
    /// A new template was fetched; `changedKeys` is `nil` when it was not activated, and
    /// `deferred` says why and until when when a maintenance window or a hold holds it back.
    case updated(templateVersion: String?, changedKeys: [String]?, deferred: DeferredActivation? = nil)
    case noChange
    /// Not fetched (not due, or backing off), and when the next fetch is planned.
    case skipped(reason: String, nextFetchAt: String?)

    public var members: [(key: String, value: JSONValue)] {
        switch self {
        case .requested:
            return [("outcome", .string("requested"))]
        case let .updated(templateVersion, changedKeys, deferred):
            var members: [(key: String, value: JSONValue)] = [
                ("outcome", .string("updated")), ("templateVersion", .optional(templateVersion)),
                ("activated", .bool(changedKeys != nil)),
            ]
            if let changedKeys { members.append(("changedKeys", .array(changedKeys.map(JSONValue.string)))) }
            if let deferred { members.append(("deferred", deferred.json)) }
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
                changedKeys: activated ? try response.strings("changedKeys") : nil,
                deferred: activated ? nil : response.json["deferred"].flatMap(DeferredActivation.init(json:)))
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
    /// Outside every maintenance window or under a hold: the activation waits (`rcagent activate --now`
    /// overrides).
    case deferred(DeferredActivation)
    /// A health-check trial of this version runs until `deadline`: its verdict comes first
    /// (an activation now would start a second trial over the first).
    case trialRunning(templateVersion: String?, deadline: Timestamp)

    public var members: [(key: String, value: JSONValue)] {
        switch self {
        case .nothingToActivate:
            [("activated", .bool(false)), ("changedKeys", .array([]))]
        case let .trialRunning(templateVersion, deadline):
            [
                ("activated", .bool(false)), ("changedKeys", .array([])),
                (
                    "trial",
                    .object([
                        ("templateVersion", .optional(templateVersion)), ("deadline", .string(deadline.iso8601)),
                    ])
                ),
            ]
        case let .deferred(deferred):
            [("activated", .bool(false)), ("changedKeys", .array([])), ("deferred", deferred.json)]
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
            if let trial = response.json["trial"], let deadlineText = trial["deadline"]?.stringValue,
                let deadline = Timestamp(iso8601: deadlineText)
            {
                // Whole seconds, as it is written: a reading that reads back the same.
                self = .trialRunning(
                    templateVersion: trial["templateVersion"]?.stringValue,
                    deadline: Timestamp(milliseconds: deadline.milliseconds.floorDivided(by: 1_000) * 1_000))
                return
            }
            self =
                response.json["deferred"].flatMap(DeferredActivation.init(json:)).map(Self.deferred)
                ?? .nothingToActivate
            return
        }
        self = .activated(templateVersion: try response.optionalString("templateVersion"), changedKeys: changedKeys)
    }
}

/// The answer to `rollback`: the version active again and the keys that changed back.
public struct RollbackResponse: ControlResponse, Equatable {
    public var templateVersion: String?
    public var changedKeys: [String]

    public init(templateVersion: String?, changedKeys: [String]) {
        self.templateVersion = templateVersion
        self.changedKeys = changedKeys
    }

    public var members: [(key: String, value: JSONValue)] {
        [
            ("rolledBack", .bool(true)), ("templateVersion", .optional(templateVersion)),
            ("changedKeys", .array(changedKeys.map(JSONValue.string))),
        ]
    }

    public init(reading response: ControlResponseReader) throws(ControlResponseError) {
        templateVersion = try response.optionalString("templateVersion")
        changedKeys = try response.strings("changedKeys")
    }
}
