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
