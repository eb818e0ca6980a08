import RCCore

extension StateStore {
    /// The deferred activation, the trial under way, the last rollback (the newest rejected version)
    /// and the rejected versions, for `status` and the device report.
    public func activationStatus() throws(StoreError) -> ActivationStatus {
        let trial = try pendingTrial()
        let rejected = try rejectedVersions()
        let last = rejected.max { ($0.at, $0.templateVersion) < ($1.at, $1.templateVersion) }
        return ActivationStatus(
            deferred: try deferredActivation(),
            trial: trial.map { ActivationStatus.Trial(templateVersion: $0.templateVersion, since: $0.startedAt) },
            lastRollback: last.map {
                ActivationStatus.Rollback(templateVersion: $0.templateVersion, at: $0.at, reason: $0.reason)
            },
            rejected: rejected.map(\.templateVersion))
    }
}
