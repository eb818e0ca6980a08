import RCCore
import RCService
import RCStore

/// The one writer of the state: every write goes to the store in one transaction and, once
/// committed, its events go to `watch` subscribers and hooks (``EventBroadcaster``) and the status
/// board's readers are told; the board reads the store's status again only after a write. A write
/// that forgets to publish is not possible from outside: the agent writes only through here.
///
/// Owned by the agent and used only on its executor (SQLite commits block on fsync, off the
/// cooperative pool). An activation is one sequence: the gate (windows, holds) decides whether it
/// happens now; every activation is recorded in the history (``activationSettings``), with
/// `HealthCheck=` as a trial in the same transaction; the agent then runs the check
/// (ActivationTrials.swift) and commits or rolls back through here. Metrics are meant to land as one
/// more board subscriber.
final class StateWriter {
    /// For reads only (values, activities, deadlines): writes go through the methods below.
    let store: StateStore
    let events: EventBroadcaster
    /// What readers see: the store's status as of the last write, and the agent's own fields.
    var board = StatusBoard()
    private let log: Logger
    /// `[Activation]` as configured: how many snapshots history keeps, and whether an activation is
    /// a trial (``HealthCheck`` set) and for how long.
    var activationSettings = ActivationSettings()

    init(store: StateStore, hooks: HookRunner, log: Logger) {
        self.store = store
        self.log = log
        events = EventBroadcaster(store: store, hooks: hooks, log: log)
    }

    /// The store's status as the board has it (read again only after a write).
    func status() throws -> StoreStatus { try board.storeStatus(of: store) }

    /// Readers look again: a round ended, the config was reloaded (no write of the store's).
    func stateMayHaveChanged() { events.stateMayHaveChanged() }

    // MARK: - Writes

    /// Sets the stale flag; `true` when it was not set before.
    func markStale(reason: String, at now: Timestamp) throws(StoreError) -> Bool {
        defer { events.publish() }
        return try store.markStale(reason: reason, at: now)
    }

    /// Records a fetch outcome, activating an update with it when `activate` (one transaction);
    /// the hooks hear of the activation with its values.
    @discardableResult
    func recordFetch(_ record: FetchRecord, at now: Timestamp, activate: Bool) throws(StoreError) -> Activation? {
        defer { events.publish() }
        let activation = try store.recordFetch(
            record, at: now, activate: activate, recording: recording(at: now), withValues: events.wantsValues)
        if let activation { events.activated(activation) }
        return activation
    }

    /// Activates the fetched snapshot; `nil` when nothing was pending.
    func activate(at now: Timestamp) throws(StoreError) -> Activation? {
        defer { events.publish() }
        let activation = try store.activateRecorded(
            at: now, keep: activationSettings.history, trialDeadline: recording(at: now).trialDeadline,
            withValues: events.wantsValues)
        if let activation { events.activated(activation) }
        return activation
    }

    /// Every activation is recorded in the history; with a health check it is a trial until then.
    private func recording(at now: Timestamp) -> ActivationRecording {
        ActivationRecording(
            keep: activationSettings.history,
            trialDeadline: activationSettings.healthCheck == nil ? nil : now + activationSettings.healthTimeout)
    }

    /// The trial's health check passed: its snapshot stays.
    func commitTrial(at now: Timestamp) throws(StoreError) {
        defer { events.publish() }
        try store.commitTrial(at: now)
        // A commit logs no event, but the trial's end changes what the report and the metrics show.
        events.stateMayHaveChanged()
    }

    /// The trial failed: the previous snapshot is active again, the hooks hear `rolled-back` with
    /// the keys that changed back. `nil` when no trial was under way.
    func rollBackTrial(_ reason: RollbackReason, at now: Timestamp) throws(StoreError) -> Activation? {
        defer { events.publish() }
        let activation = try store.rollBackTrial(reason, at: now)
        if let activation { events.rolledBack(activation) }
        return activation
    }

    /// `rcagent rollback [VERSION]`: a kept snapshot active again, the versions after it rejected.
    func rollback(to version: String?, at now: Timestamp) throws(StoreError) -> Result<Activation, RollbackRefusal> {
        defer { events.publish() }
        let result = try store.rollback(to: version, at: now)
        if case let .success(activation) = result { events.rolledBack(activation) }
        return result
    }

    /// Moves the stored fetch times back by `step` (the wall clock stepped back behind them).
    func rebaseFetchTimes(back step: Duration, at now: Timestamp) throws(StoreError) {
        defer { events.publish() }
        try store.rebaseFetchTimes(back: step, at: now)
    }

    func applyActivity(_ message: LiveActivityMessage, at now: Timestamp) throws(StoreError)
        -> LiveActivityRules.Outcome
    {
        defer { events.publish() }
        return try store.applyActivity(message, now: now)
    }

    func expireActivities(at now: Timestamp) throws(StoreError) -> StateStore.Expiry {
        defer { events.publish() }
        return try store.expireActivities(now: now)
    }

    func removeActivity(id: String, at now: Timestamp, reason: String) throws(StoreError) -> LiveActivity? {
        defer { events.publish() }
        return try store.removeActivity(id: id, now: now, reason: reason)
    }

    /// A note a channel keeps across restarts: `nil` when none, or unreadable.
    func note(_ note: StateNote) -> String? { try? store.note(note) }

    /// Keeps a note; a store that refuses it is logged (the channel carries on without it).
    func setNote(_ note: StateNote, _ value: String?) {
        do { try store.setNote(note, value) } catch { log.error("Failed to store the \(note.rawValue) note: \(error)") }
    }
}
