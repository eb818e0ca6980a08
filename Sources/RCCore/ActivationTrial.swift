/// Why a snapshot stopped being active against the rules of a trial, as `history` prints it.
public enum RollbackReason: Sendable, Equatable {
    /// The health check exited with this status (or 128 + the signal that killed it).
    case healthCheckFailed(exitCode: Int32)
    /// The health check gave no verdict within `HealthTimeout=`.
    case timedOut
    /// The daemon or the device stopped during the trial.
    case interrupted
    /// `rcagent rollback` went back past it.
    case byRollback

    /// The words `history` and `status` show: `health check failed (exit 3)`, `timed out`, ...
    public var description: String {
        switch self {
        case let .healthCheckFailed(code): "health check failed (exit \(code))"
        case .timedOut: "timed out"
        case .interrupted: "interrupted"
        case .byRollback: "by rollback"
        }
    }
}

/// What a health check said.
public enum HealthVerdict: Sendable, Equatable {
    /// Exit 0.
    case passed
    /// Any other exit status (128 + N for a signal N).
    case failed(exitCode: Int32)
    /// No verdict within `HealthTimeout=` (the check was killed).
    case timedOut
}

/// The rules of a trial (SPEC: safe activation) as a plain value: an activation with a health check
/// starts one; the check's verdict commits it or rolls it back; a deadline that passes first rolls it
/// back; a trial found pending when the daemon starts was interrupted and rolls back. The daemon does
/// what the returned ``Decision`` says, persisting each step before the next.
public struct ActivationTrial: Sendable, Equatable {
    public enum Phase: Sendable, Equatable {
        case idle
        /// The check runs for this version; `deadline` is when `HealthTimeout=` runs out.
        case checking(version: String?, deadline: Timestamp)
    }

    /// What to do next.
    public enum Decision: Sendable, Equatable {
        /// Persist the trial, then run the health check, killing it at `deadline`.
        case runCheck(deadline: Timestamp)
        /// The snapshot stays: record the trial committed.
        case commit
        /// Make the previous snapshot active again and reject this version.
        case rollBack(RollbackReason)
        /// Nothing to do (no trial under way, or a verdict that came too late to matter).
        case nothing
    }

    public private(set) var phase = Phase.idle

    public init() {}

    /// A trial found in the store when the daemon starts: it never finished, so it rolls back.
    public static func resume(pendingFound: Bool) -> Decision { pendingFound ? .rollBack(.interrupted) : .nothing }

    /// An activation with a health check happened at `now`.
    public mutating func start(version: String?, at now: Timestamp, timeout: Duration) -> Decision {
        let deadline = now + timeout
        phase = .checking(version: version, deadline: deadline)
        return .runCheck(deadline: deadline)
    }

    /// The health check answered at `now`. A pass that arrives after the deadline does not count:
    /// the rollback for the timeout is what happened (or is about to).
    public mutating func verdict(_ verdict: HealthVerdict, at now: Timestamp) -> Decision {
        guard case let .checking(_, deadline) = phase else { return .nothing }
        phase = .idle
        switch verdict {
        case .passed: return now <= deadline ? .commit : .rollBack(.timedOut)
        case let .failed(code): return .rollBack(.healthCheckFailed(exitCode: code))
        case .timedOut: return .rollBack(.timedOut)
        }
    }

    /// The clock reached `now` while the check runs: past the deadline, the trial rolls back.
    public mutating func tick(at now: Timestamp) -> Decision {
        guard case let .checking(_, deadline) = phase, now >= deadline else { return .nothing }
        phase = .idle
        return .rollBack(.timedOut)
    }
}
