/// Safe activation as `status`, `watch` readers and the device report see it: the snapshot waiting
/// for a window or a hold, the trial under way, the last rollback and the rejected versions.
public struct ActivationStatus: Sendable, Equatable {
    /// A fetched snapshot waiting for a maintenance window or the end of a hold.
    public typealias Deferred = DeferredActivation

    /// The activation whose health check has not answered yet.
    public struct Trial: Sendable, Equatable {
        public var templateVersion: String?
        public var since: Timestamp
        public init(templateVersion: String?, since: Timestamp) {
            self.templateVersion = templateVersion
            self.since = since
        }
    }

    /// The newest version rejected: by a failed trial or by `rcagent rollback` (as the report has it).
    public typealias Rollback = DeviceReport.Activation.Rollback

    public var deferred: Deferred?
    public var trial: Trial?
    public var lastRollback: Rollback?
    /// Oldest first.
    public var rejected: [String]

    public init(deferred: Deferred? = nil, trial: Trial? = nil, lastRollback: Rollback? = nil, rejected: [String] = [])
    {
        self.deferred = deferred
        self.trial = trial
        self.lastRollback = lastRollback
        self.rejected = rejected
    }

    /// The most rejected versions the device report carries (the newest): the report has a size limit.
    public static let reportedRejected = 20

    /// `status --json`'s `activation` member.
    public var json: JSONValue {
        .object([
            ("deferred", deferred?.json ?? .null),
            (
                "trial",
                trial.map {
                    .object([("templateVersion", .optional($0.templateVersion)), ("since", .string($0.since.iso8601))])
                } ?? .null
            ),
            ("lastRollback", rollbackJSON),
            ("rejected", .array(rejected.map(JSONValue.string))),
        ])
    }

    /// The device report's `activation` member: versions only, the newest rejected ones.
    public var report: DeviceReport.Activation {
        DeviceReport.Activation(
            deferred: deferred?.templateVersion, trial: trial?.templateVersion,
            lastRollback: lastRollback,
            rejected: Array(rejected.suffix(Self.reportedRejected)))
    }

    private var rollbackJSON: JSONValue {
        lastRollback.map {
            .object([
                ("templateVersion", .string($0.templateVersion)), ("at", .string($0.at.iso8601)),
                ("reason", .string($0.reason)),
            ])
        } ?? .null
    }

    /// The `status` lines: `trial:` and `rolled back:` only when there is something to say.
    public var textLines: [String] {
        var lines: [String] = []
        if let deferred { lines.append("deferred:     \(deferred.text)") }
        if let trial {
            lines.append("trial:        template \(trial.templateVersion ?? "-") since \(trial.since.iso8601)")
        }
        if let lastRollback {
            lines.append(
                "rolled back:  template \(lastRollback.templateVersion) at \(lastRollback.at.iso8601) (\(lastRollback.reason))"
            )
        }
        if !rejected.isEmpty { lines.append("rejected:     \(rejected.joined(separator: ", "))") }
        return lines
    }
}
