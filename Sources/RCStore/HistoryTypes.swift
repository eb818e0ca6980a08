import RCCore

extension RollbackReason {
    var storedName: String {
        switch self {
        case .healthCheckFailed: "health-check-failed"
        case .timedOut: "timed-out"
        case .interrupted: "interrupted"
        case .byRollback: "rollback"
        }
    }

    init?(storedName: String?, exitCode: Int64?) {
        switch storedName {
        case "health-check-failed": self = .healthCheckFailed(exitCode: Int32(truncatingIfNeeded: exitCode ?? -1))
        case "timed-out": self = .timedOut
        case "interrupted": self = .interrupted
        case "rollback": self = .byRollback
        default: return nil
        }
    }
}

/// What became of an activated snapshot.
public enum HistoryOutcome: Sendable, Equatable {
    /// The active snapshot.
    case active
    /// Was active; a later activation replaced it.
    case superseded
    /// Active on trial: its health check has not answered yet.
    case trial
    /// Rolled back, and its version rejected.
    case rolledBack(RollbackReason)

    /// As `history` prints it: `active`, `superseded`, `trial`, `rolled-back: timed out`.
    public var description: String {
        switch self {
        case .active: "active"
        case .superseded: "superseded"
        case .trial: "trial"
        case let .rolledBack(reason): "rolled-back: " + reason.description
        }
    }
}

/// One kept activated snapshot (without its values).
public struct HistoryEntry: Sendable, Equatable {
    public var id: Int64
    public var templateVersion: String?
    public var activatedAt: Timestamp
    /// Where it came from: `fetch`, `rollback`, or `baseline` (active before history was kept).
    public var source: String
    public var changedKeys: Int
    public var outcome: HistoryOutcome
}

/// A version this device will not activate again.
public struct RejectedVersion: Sendable, Equatable {
    public var templateVersion: String
    public var at: Timestamp
    public var reason: String
}

/// The activation on trial: persisted before its health check runs.
public struct PendingTrial: Sendable, Equatable {
    public var historyID: Int64
    public var templateVersion: String?
    public var startedAt: Timestamp
    /// When `HealthTimeout=` runs out.
    public var deadline: Timestamp
}

/// Why `rollback` did nothing.
public enum RollbackRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    /// No kept snapshot older than the active one that is not rejected.
    case nothingToRollBackTo
    /// The version asked for is not among the kept snapshots.
    case notKept(String)
    /// The version asked for is rejected.
    case rejected(String)
    /// The version asked for is the active one.
    case alreadyActive(String)
    /// A trial is under way: its health check decides first.
    case trialPending(String?)

    public var description: String {
        switch self {
        case .nothingToRollBackTo: "no kept snapshot older than the active one to roll back to"
        case let .notKept(version): "version \(version) is not among the kept snapshots (see rcagent history)"
        case let .rejected(version): "version \(version) is rejected on this device"
        case let .alreadyActive(version): "version \(version) is already active"
        case let .trialPending(version): "version \(version ?? "(none)") is on trial; its health check decides first"
        }
    }
}

/// How an activation is recorded in the history: where it came from, how many snapshots history
/// keeps, and, with a health check, when its trial's `HealthTimeout=` runs out.
public struct ActivationRecording: Sendable, Equatable {
    public var source: String
    public var keep: Int
    /// `nil`: no health check, the activation is not a trial.
    public var trialDeadline: Timestamp?

    public init(source: String = "fetch", keep: Int, trialDeadline: Timestamp? = nil) {
        self.source = source
        self.keep = keep
        self.trialDeadline = trialDeadline
    }
}
