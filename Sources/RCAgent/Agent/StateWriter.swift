import RCCore
import RCService
import RCStore

/// The one writer of the state: every write goes to the store in one transaction and, once
/// committed, its events go to `watch` subscribers and hooks (``EventBroadcaster``) and the status
/// board's subscribers are pushed a ``StatusSnapshot``; the board reads the store's status again
/// only after a write (and not even then for the stale flag, whose change it knows). A write that
/// forgets to publish is not possible from outside: the agent writes only through here.
///
/// Owned by the agent and used only on its executor (SQLite commits block on fsync, off the
/// cooperative pool). An activation is one sequence: the gate (windows, holds) decides whether it
/// happens now; every activation is recorded in the history (``activationSettings``), with
/// `HealthCheck=` as a trial in the same transaction; the agent then runs the check
/// (``Activator``) and commits or rolls back through here. Readers (the device report, metrics)
/// subscribe with ``subscribe(_:)``.
final class StateWriter {
    /// For reads only (values, activities, deadlines): writes go through the methods below.
    let store: StateStore
    let events: EventBroadcaster
    /// What readers see: the store's status as of the last write, and the agent's own fields.
    var board: StatusBoard
    private let log: Logger
    /// `[Activation]` as configured: how many snapshots history keeps, and whether an activation is
    /// a trial (``HealthCheck`` set) and for how long.
    var activationSettings = ActivationSettings()

    init(store: StateStore, hooks: HookRunner, config: AgentConfig, log: Logger) {
        self.store = store
        self.log = log
        board = StatusBoard(config: config)
        events = EventBroadcaster(store: store, hooks: hooks, log: log)
    }

    /// The store's status as the board has it (read again only after a write).
    func status() throws -> StoreStatus { try board.storeStatus(of: store) }

    // MARK: - Status subscribers

    /// Subscribes `reader` to the status: it is called at once with the snapshot now, then after
    /// every write and every change of the board's own fields, on the agent's executor (so it
    /// must only hand the snapshot on: an inbox, a lock). The id ends the subscription.
    func subscribe(_ reader: @escaping @Sendable (StatusSnapshot) -> Void) -> Int {
        board.lastReader += 1
        board.readers[board.lastReader] = reader
        reader(snapshot())
        return board.lastReader
    }

    func unsubscribe(_ id: Int) { board.readers[id] = nil }

    /// Pushes the snapshot now to every subscriber (a write, a round that ended, a reload, a
    /// channel's new state). Nothing is read while nobody subscribes.
    func publishStatus() {
        guard !board.readers.isEmpty else { return }
        let snapshot = snapshot()
        for reader in board.readers.values { reader(snapshot) }
    }

    private func snapshot() -> StatusSnapshot {
        let status = try? status()
        return StatusSnapshot(
            store: status, fetching: board.fetching, push: board.push, report: board.report,
            device: DeviceReportAssembly.report(of: board, status: status, store: store, at: .now()))
    }

    /// After every write: its events go out, then the status.
    private func published() {
        events.publish()
        publishStatus()
    }

    // MARK: - Writes

    /// Sets the stale flag; `true` when it was not set before.
    func markStale(reason: String, at now: Timestamp) throws(StoreError) -> Bool {
        defer { published() }
        let newlySet = try store.markStale(reason: reason, at: now)
        // The one change a ping's first write makes: the board needs no read for it.
        if newlySet {
            board.apply(store.lastWrite) { status in
                status.stale.isSet = true
                status.stale.reason = StoredText.reason(reason)
                status.stale.since = now
            }
        }
        return newlySet
    }

    /// Records a fetch outcome, activating an update with it when `activate` (one transaction);
    /// the hooks hear of the activation with its values.
    @discardableResult
    func recordFetch(_ record: FetchRecord, at now: Timestamp, activate: Bool) throws(StoreError) -> Activation? {
        defer { published() }
        let activation = try store.recordFetch(
            record, at: now, activate: activate, recording: recording(at: now), withValues: events.wantsValues)
        if let activation { events.activated(activation) }
        return activation
    }

    /// Activates the fetched snapshot; `nil` when nothing was pending.
    func activate(at now: Timestamp) throws(StoreError) -> Activation? {
        defer { published() }
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
        defer { published() }
        try store.commitTrial(at: now)
    }

    /// The trial failed: the previous snapshot is active again, the hooks hear `rolled-back` with
    /// the keys that changed back. `nil` when no trial was under way.
    func rollBackTrial(_ reason: RollbackReason, at now: Timestamp) throws(StoreError) -> Activation? {
        defer { published() }
        let activation = try store.rollBackTrial(reason, at: now)
        if let activation { events.rolledBack(activation) }
        return activation
    }

    /// `rcagent rollback [VERSION]`: a kept snapshot active again, the versions after it rejected.
    func rollback(to version: String?, at now: Timestamp) throws(StoreError) -> Result<Activation, RollbackRefusal> {
        defer { published() }
        let result = try store.rollback(to: version, at: now)
        if case let .success(activation) = result { events.rolledBack(activation) }
        return result
    }

    /// Moves the stored fetch times back by `step` (the wall clock stepped back behind them).
    func rebaseFetchTimes(back step: Duration, at now: Timestamp) throws(StoreError) {
        defer { published() }
        try store.rebaseFetchTimes(back: step, at: now)
    }

    func applyActivity(_ message: LiveActivityMessage, at now: Timestamp) throws(StoreError)
        -> LiveActivityRules.Outcome
    {
        defer { published() }
        return try store.applyActivity(message, now: now)
    }

    func expireActivities(at now: Timestamp) throws(StoreError) -> StateStore.Expiry {
        defer { published() }
        return try store.expireActivities(now: now)
    }

    func removeActivity(id: String, at now: Timestamp, reason: String) throws(StoreError) -> LiveActivity? {
        defer { published() }
        return try store.removeActivity(id: id, now: now, reason: reason)
    }

    /// A note a channel keeps across restarts: `nil` when none, or unreadable.
    func note(_ note: StateNote) -> String? { try? store.note(note) }

    /// Keeps a note; a store that refuses it is logged (the channel carries on without it).
    func setNote(_ note: StateNote, _ value: String?) {
        do { try store.setNote(note, value) } catch { log.error("Failed to store the \(note.rawValue) note: \(error)") }
    }

    /// Keeps (or, `nil`, ends) the deferred activation; with `announce`, its `activation-deferred`
    /// event goes to `watch` and the hooks. The report carries the deferral even when no event was
    /// logged (it ended, its end moved): the status is pushed all the same.
    func recordDeferral(_ deferred: DeferredActivation?, announce: Bool, at now: Timestamp) throws(StoreError) {
        defer { published() }
        try store.setDeferredActivation(deferred, announce: announce, at: now)
    }
}
