import RCCore

/// Safe activation's durable half: the kept activated snapshots with their values and outcomes,
/// the rejected versions and the trial under way. Every change here is one transaction with the
/// activation or rollback it records, so a kill at any moment leaves a whole snapshot active and a
/// trial either recorded with it or not begun.
extension StateStore {
    /// Activates the pending fetched snapshot as ``activate(at:withValues:)`` does and records it in
    /// the history (keeping the newest `keep`), in one transaction. With `trialDeadline`, the
    /// activation is a trial until ``commitTrial(at:)`` or ``rollBackTrial(_:at:)``. A pending
    /// snapshot whose version is rejected is dropped instead (returns `nil`), as is one found while a
    /// trial is under way (the trial decides first; the snapshot stays pending).
    @discardableResult
    public func activateRecorded(
        at now: Timestamp, source: String = "fetch", keep: Int, trialDeadline: Timestamp? = nil,
        withValues: Bool = false
    ) throws(StoreError) -> Activation? {
        try write { () throws -> Activation? in
            try activateRecordedPending(
                at: now, recording: ActivationRecording(source: source, keep: keep, trialDeadline: trialDeadline),
                withValues: withValues)
        }
    }

    /// ``activateRecorded(at:source:keep:trialDeadline:withValues:)`` inside a transaction already
    /// open (a fetch recorded with its activation, as one).
    func activateRecordedPending(
        at now: Timestamp, recording: ActivationRecording, withValues: Bool
    ) throws(SQLiteError) -> Activation? {
        guard try trialRow() == nil else { return nil }
        let pending = try db.query("SELECT template_version FROM snapshots WHERE kind = 'fetched' AND pending = 1") {
            $0.text(0)
        }
        guard let version = pending.first else { return nil }
        if let version, try isRejectedVersion(version) {
            try db.run("UPDATE snapshots SET pending = 0 WHERE kind = 'fetched'")
            return nil
        }
        try recordBaseline(at: now)
        guard let activation = try activatePending(at: now, withValues: withValues) else { return nil }
        try appendHistory(
            version: activation.templateVersion, at: now, source: recording.source,
            changedKeys: activation.changedKeys.count, trial: recording.trialDeadline != nil, keep: recording.keep)
        if let trialDeadline = recording.trialDeadline {
            try db.run(
                "INSERT INTO trial (id, history_id, started_at, deadline) VALUES (1, (SELECT max(id) FROM history), ?, ?)",
                [.integer(now.milliseconds), .integer(trialDeadline.milliseconds)])
        }
        return activation
    }

    /// The trial under way, if any (after a restart: the one that was interrupted).
    public func pendingTrial() throws(StoreError) -> PendingTrial? {
        try Self.wrap { () throws(SQLiteError) in try trialRow() }
    }

    /// The health check passed: the trial's snapshot is simply the active one.
    public func commitTrial(at now: Timestamp) throws(StoreError) {
        // Readers see it: `history` and `status` read the trial and its outcome from the reader file.
        try write {
            guard let trial = try trialRow() else { return }
            try db.run("UPDATE history SET outcome = 'active' WHERE id = ?", [.integer(trial.historyID)])
            try db.run("DELETE FROM trial")
        }
    }

    /// The trial failed (or was interrupted): the snapshot active before it is active again, the
    /// trial's version is rejected, and a `rolled-back` event carries the keys that changed back.
    /// Returns `nil` when no trial was under way.
    @discardableResult
    public func rollBackTrial(_ reason: RollbackReason, at now: Timestamp) throws(StoreError) -> Activation? {
        try write { () throws -> Activation? in
            guard let trial = try trialRow() else { return nil }
            try db.run("DELETE FROM trial")
            let previous = try db.query(
                "SELECT id FROM history WHERE id < ? AND outcome = 'superseded' ORDER BY id DESC LIMIT 1",
                [.integer(trial.historyID)]
            ) { $0.integer(0) ?? 0 }.first
            return try restore(previous, replacing: [trial.historyID], reason: reason, at: now)
        }
    }

    /// `rcagent rollback [VERSION]`: re-activates the newest kept snapshot older than the active one
    /// that is not rejected (or the newest kept one of `version`), rejecting every version activated
    /// after it.
    public func rollback(to version: String? = nil, at now: Timestamp) throws(StoreError) -> Result<
        Activation, RollbackRefusal
    > {
        try write { () throws -> Result<Activation, RollbackRefusal> in
            if let trial = try trialRow() { return .failure(.trialPending(trial.templateVersion)) }
            let entries = try historyRows()
            guard let current = entries.last(where: { $0.outcome == .active }) else {
                return .failure(.nothingToRollBackTo)
            }
            let rejected = Set(try rejectedRows().map(\.templateVersion))
            let target: HistoryEntry
            if let version {
                if current.templateVersion == version { return .failure(.alreadyActive(version)) }
                if rejected.contains(version) { return .failure(.rejected(version)) }
                guard let found = entries.last(where: { $0.templateVersion == version && $0.id < current.id }) else {
                    return .failure(.notKept(version))
                }
                target = found
            } else {
                guard
                    let found = entries.last(where: { entry in
                        entry.id < current.id && entry.templateVersion.map { !rejected.contains($0) } ?? true
                            && entry.templateVersion != current.templateVersion
                            && entry.outcome == .superseded
                    })
                else { return .failure(.nothingToRollBackTo) }
                target = found
            }
            let after = entries.filter { $0.id > target.id && $0.templateVersion != target.templateVersion }
            let activation = try restore(target.id, replacing: after.map(\.id), reason: .byRollback, at: now)
            return .success(activation)
        }
    }

    /// The kept snapshots, newest first.
    public func history() throws(StoreError) -> [HistoryEntry] {
        try Self.wrap { () throws(SQLiteError) in try historyRows().reversed() }
    }

    /// The rejected versions, oldest first.
    public func rejectedVersions() throws(StoreError) -> [RejectedVersion] {
        try Self.wrap { () throws(SQLiteError) in try rejectedRows() }
    }

    /// Whether `version` must never be activated on this device.
    public func isRejected(_ version: String) throws(StoreError) -> Bool {
        try Self.wrap { () throws(SQLiteError) in try isRejectedVersion(version) }
    }

    // MARK: - Inside a transaction

    private func isRejectedVersion(_ version: String) throws(SQLiteError) -> Bool {
        !(try db.query("SELECT 1 FROM rejected_versions WHERE template_version = ?", [.text(version)]) { _ in 1 })
            .isEmpty
    }

    private func trialRow() throws(SQLiteError) -> PendingTrial? {
        try db.query(
            """
            SELECT t.history_id, h.template_version, t.started_at, t.deadline
            FROM trial t JOIN history h ON h.id = t.history_id
            """
        ) { row in
            PendingTrial(
                historyID: row.integer(0) ?? 0, templateVersion: row.text(1),
                startedAt: Timestamp(milliseconds: row.integer(2) ?? 0),
                deadline: Timestamp(milliseconds: row.integer(3) ?? 0))
        }.first
    }

    private func historyRows() throws(SQLiteError) -> [HistoryEntry] {
        try db.query(
            "SELECT id, template_version, activated_at, source, changed_keys, outcome, reason, exit_code FROM history ORDER BY id"
        ) { row in
            let outcome: HistoryOutcome =
                switch row.text(5) {
                case "active": .active
                case "trial": .trial
                case "rolled-back":
                    .rolledBack(RollbackReason(storedName: row.text(6), exitCode: row.integer(7)) ?? .interrupted)
                default: .superseded
                }
            return HistoryEntry(
                id: row.integer(0) ?? 0, templateVersion: row.text(1),
                activatedAt: Timestamp(milliseconds: row.integer(2) ?? 0), source: row.text(3) ?? "",
                changedKeys: Int(row.integer(4) ?? 0), outcome: outcome)
        }
    }

    private func rejectedRows() throws(SQLiteError) -> [RejectedVersion] {
        try db.query("SELECT template_version, rejected_at, reason FROM rejected_versions ORDER BY rejected_at, 1") {
            RejectedVersion(
                templateVersion: $0.text(0) ?? "", at: Timestamp(milliseconds: $0.integer(1) ?? 0),
                reason: $0.text(2) ?? "")
        }
    }

    /// The snapshot that was active before history was kept (a database from an older version, or
    /// values activated by ``activate(at:withValues:)``) becomes the first entry, so a trial always
    /// has something to roll back to.
    private func recordBaseline(at now: Timestamp) throws(SQLiteError) {
        let current = try db.query("SELECT outcome FROM history ORDER BY id DESC LIMIT 1") { $0.text(0) }
        guard current.isEmpty else { return }
        let active = try db.query("SELECT template_version, activated_at FROM snapshots WHERE kind = 'active'") {
            ($0.text(0), $0.integer(1))
        }
        guard let (version, activatedAt) = active.first else { return }
        try db.run(
            """
            INSERT INTO history (template_version, activated_at, source, changed_keys, outcome, set_id)
            VALUES (?, ?, 'baseline', 0, 'active', ?)
            """, [version.map(SQLValue.text) ?? .null, .integer(activatedAt ?? now.milliseconds), try activeValueSet()])
    }

    /// A new, empty value set's id.
    func newValueSet() throws(SQLiteError) -> SQLValue {
        .integer(try db.query("INSERT INTO value_sets DEFAULT VALUES RETURNING id") { $0.integer(0) ?? 0 }.first ?? 0)
    }

    /// Stores `values` as value set `set`, ``RowsInsert/rowsPerStatement`` rows per statement while that
    /// many are left. One row per statement cost 3 µs a row, most of it starting the statement again
    /// (its cursors, its seek from the root); a hundred at a time, about 1 µs (BENCHMARKS.md).
    /// In key order (SQLite's BINARY collation: the bytes, as ``RemoteValues`` holds them), on
    /// consecutive rowids, and the set says which (``setRows(_:_:)`` reads them by rowid); the rows
    /// are kept as ``storedSet``, for an activation in the same transaction to merge from memory.
    func insertValues(_ values: RemoteValues, into set: SQLValue) throws(SQLiteError) {
        if let (first, last) = try insertRows(values, into: set) {
            try db.run(
                "UPDATE value_sets SET first_row = ?, last_row = ? WHERE id = ?",
                [.integer(first), .integer(last), set])
        }
        storedSet = HeldSet(id: set.integer, values: values)
    }

    /// Inserts `rows` into value set `set`, in their order; the first and last rowid when they were
    /// consecutive (SQLite gives a new row the largest rowid plus one; should it ever not, past
    /// 2^63 - 1, where it picks at random, the set is read through its index instead).
    private func insertRows(_ rows: RemoteValues, into set: SQLValue) throws(SQLiteError) -> (Int64, Int64)? {
        var range: (first: Int64, last: Int64)?
        var consecutive = true
        try Self.setValuesInsert.run(rows, on: db, after: [set]) { inserted, batch in
            if let range, inserted != range.last + Int64(batch) { consecutive = false }
            range = (range?.first ?? inserted - Int64(batch) + 1, inserted)
        }
        guard consecutive, let range else { return nil }
        return range
    }

    static let setValuesInsert = RowsInsert("INSERT INTO set_values (set_id, key, value) VALUES ", row: "(?1, ?, ?)")

    /// Value set `set`'s keys and values in key order (a `.null` set: none), from a statement of
    /// its own for each `side` (two sides are read at once): by rowid when the set says which rows
    /// hold it, through its index otherwise (a set stored before schema 7).
    ///
    /// A range is used only while its first and last rows are the set's: a copy of the database
    /// that inserts the rows again (`sqlite3 .dump` and a restore) numbers them anew, in the same
    /// order, and the range then names rows of another set or none. A set's rows stay consecutive
    /// through such a copy, so its two ends being the set's means the whole range is.
    func setRows(_ set: SQLValue, _ side: String) throws(SQLiteError) -> Statement {
        let statement: Statement
        if let (first, last) = try setRange(set) {
            statement = try db.cachedStatement(
                "SELECT key, value FROM set_values AS \(side) WHERE rowid BETWEEN ? AND ?")
            try statement.bind([.integer(first), .integer(last)])
        } else {
            statement = try db.cachedStatement(
                "SELECT key, value FROM set_values AS \(side) WHERE set_id = ? ORDER BY key")
            try statement.bind([set])
        }
        return statement
    }

    /// The first and last rowid of value set `set`'s rows, while those two rows are the set's (see
    /// ``setRows(_:_:)``): `nil` for a set stored before schema 7 or one whose rows were renumbered.
    func setRange(_ set: SQLValue) throws(SQLiteError) -> (first: Int64, last: Int64)? {
        let range = try db.query(Self.setRangeSQL, [set]) { ($0.integer(0), $0.integer(1)) }.first
        guard case let (first?, last?)? = range else { return nil }
        return (first, last)
    }

    /// Value set `?1`'s range of rows, when its first and last rows are the set's (``setRows(_:_:)``).
    private static let setRangeSQL = """
        SELECT first_row, last_row FROM value_sets AS s WHERE id = ?1
            AND (SELECT set_id FROM set_values WHERE rowid = s.first_row) = ?1
            AND (SELECT set_id FROM set_values WHERE rowid = s.last_row) = ?1
        """

    /// Drops the value sets that neither a snapshot nor a history entry names (few: one per kept
    /// entry and the fetched snapshot). `NOT EXISTS`, not `NOT IN`: both tables are a few rows, and
    /// `NOT IN` built two temporary b-trees at every fetch (10% of the daemon's CPU for a small one,
    /// BENCHMARKS.md). Run by ``write(readerVisible:_:)`` before it commits, once, when the body set
    /// ``setsMayBeUnused``.
    ///
    /// Their rows stay until ``collectDroppedSets()``: deleting the 3,000 rows of the set an
    /// activation pushed out of the history was an eighth of the activation's time (BENCHMARKS.md),
    /// and nothing reads them any more. Every query names its set, and a set's id is never given
    /// again (`AUTOINCREMENT`), so rows of a dropped set are never read as another's.
    func dropUnusedValueSets() throws(SQLiteError) {
        uncommittedDrops += try db.query(
            """
            DELETE FROM value_sets WHERE NOT EXISTS (SELECT 1 FROM history WHERE set_id = value_sets.id)
                AND NOT EXISTS (SELECT 1 FROM snapshots WHERE set_id = value_sets.id)
            RETURNING id
            """
        ) { $0.integer(0) ?? 0 }
    }

    /// Deletes the rows of the value sets dropped since the last call, in a transaction of its own
    /// that readers do not see: the daemon runs it after it has answered for the write that dropped
    /// them. The first call after open looks at every set stored (a seek per set: a few dozen), so
    /// rows left by a writer that stopped first are found too; later ones at the sets dropped since.
    ///
    /// Committed without waiting for the disk (not `durable`): losing this deletion to a power cut
    /// loses nothing anyone reads, and the next start's sweep finds the rows again. The next
    /// durable commit's sync writes it out with its own, in order (the log is appended).
    public func collectDroppedSets() throws(StoreError) {
        guard hasDroppedSetRows else { return }
        let sweep = sweepForDroppedSets
        let candidates = droppedSets
        try write(readerVisible: false, durable: false) {
            if sweep {
                var after = Int64.min
                while let set = try nextStoredSet(after: after) {
                    try deleteRowsIfDropped(set)
                    after = set
                }
            } else {
                for set in candidates { try deleteRowsIfDropped(set) }
            }
        }
        sweepForDroppedSets = false
        droppedSets.removeFirst(candidates.count)
    }

    /// Deletes set `set`'s rows unless the set is still stored: the ids come from committed drops
    /// or from the rows themselves, and a set's row is the only proof it is gone.
    private func deleteRowsIfDropped(_ set: Int64) throws(SQLiteError) {
        let kept = try db.query("SELECT 1 FROM value_sets WHERE id = ?", [.integer(set)]) { _ in true }
        if kept.isEmpty { try db.run("DELETE FROM set_values WHERE set_id = ?", [.integer(set)]) }
    }

    /// The smallest value set id above `after` that has rows stored: one seek in their index.
    private func nextStoredSet(after: Int64) throws(SQLiteError) -> Int64? {
        try db.query("SELECT set_id FROM set_values WHERE set_id > ? ORDER BY set_id LIMIT 1", [.integer(after)]) {
            $0.integer(0)
        }.first ?? nil
    }

    /// Adds the snapshot now active (it names the fetched snapshot's value set) as the newest entry and drops the oldest beyond `keep`, with the value sets
    /// nothing names any more.
    private func appendHistory(
        version: String?, at now: Timestamp, source: String, changedKeys: Int, trial: Bool, keep: Int
    ) throws(SQLiteError) {
        try db.run("UPDATE history SET outcome = 'superseded' WHERE outcome IN ('active', 'trial')")
        try db.run(
            """
            INSERT INTO history (template_version, activated_at, source, changed_keys, outcome, set_id)
            VALUES (?, ?, ?, ?, ?, (SELECT set_id FROM snapshots WHERE kind = 'fetched'))
            """,
            [
                version.map(SQLValue.text) ?? .null, .integer(now.milliseconds), .text(source),
                .integer(Int64(changedKeys)), .text(trial ? "trial" : "active"),
            ])
        // A trial keeps the snapshot it would roll back to, whatever `keep` says.
        let kept = Int64(max(keep, trial ? 2 : 1))
        try db.run(
            "DELETE FROM history WHERE id NOT IN (SELECT id FROM history ORDER BY id DESC LIMIT ?)", [.integer(kept)])
        setsMayBeUnused = true
    }

    /// Makes history entry `target`'s values active (none: no remote values), marks it active and the
    /// entries `replaced` rolled back for `reason`, rejects their versions, and logs `rolled-back`.
    private func restore(_ target: Int64?, replacing replaced: [Int64], reason: RollbackReason, at now: Timestamp)
        throws(SQLiteError) -> Activation
    {
        let targetID = SQLValue.integer(target ?? -1)
        let targetSet = SQLValue.of(
            try db.query("SELECT set_id FROM history WHERE id = ?", [targetID]) { $0.integer(0) }.first ?? nil)
        let (changedKeys, changes) = try valueChanges(from: try activeValueSet(), to: targetSet, withValues: true)
        let version =
            try db.query("SELECT template_version FROM history WHERE id = ?", [targetID]) { $0.text(0) }.first ?? nil
        if target == nil {
            try db.run("DELETE FROM snapshots WHERE kind = 'active'")
        } else {
            // The entry's value set becomes the active one: nothing is copied.
            try db.run(
                """
                INSERT OR REPLACE INTO snapshots (kind, template_version, etag, fetched_at, activated_at, pending, set_id)
                VALUES ('active', ?, NULL, NULL, ?, 0, ?)
                """, [version.map(SQLValue.text) ?? .null, .integer(now.milliseconds), targetSet])
            try db.run("UPDATE history SET outcome = 'active' WHERE id = ?", [targetID])
        }
        var exitCode = SQLValue.null
        if case let .healthCheckFailed(code) = reason { exitCode = .integer(Int64(code)) }
        for id in replaced {
            try db.run(
                "UPDATE history SET outcome = 'rolled-back', reason = ?, exit_code = ? WHERE id = ?",
                [.text(reason.storedName), exitCode, .integer(id)])
            try db.run(
                """
                INSERT OR IGNORE INTO rejected_versions (template_version, rejected_at, reason)
                SELECT template_version, ?, ? FROM history WHERE id = ? AND template_version IS NOT NULL
                """, [.integer(now.milliseconds), .text(reason.description), .integer(id)])
        }
        // A fetched snapshot of a rejected version never becomes active.
        try db.run(
            """
            UPDATE snapshots SET pending = 0 WHERE kind = 'fetched' AND pending = 1
                AND template_version IN (SELECT template_version FROM rejected_versions)
            """)
        // The set active before goes, unless a history entry names it.
        setsMayBeUnused = true
        try appendEvent(
            .rolledBack, at: now,
            detail: .object([
                ("changedKeys", .array(changedKeys.map(JSONValue.string))),
                ("templateVersion", version.map(JSONValue.string) ?? .null),
                ("reason", .string(reason.description)),
            ]))
        return Activation(changedKeys: changedKeys, templateVersion: version, changes: changes)
    }
}

/// An `INSERT` of a document's keys and values, in their order: ``rowsPerStatement`` rows a
/// statement, the rest one by one, each key and value bound in place (``Statement/runBorrowing(_:)``)
/// after the values every row shares (bound as `?1`...).
struct RowsInsert {
    static let rowsPerStatement = 100
    let single: String
    let batch: String

    /// `insert` (up to `VALUES `) followed by one `row`'s placeholders, or by as many as a batch has.
    init(_ insert: String, row: String) {
        single = insert + row
        batch = single + String(repeating: ", " + row, count: Self.rowsPerStatement - 1)
    }

    /// Inserts `rows` through `db`, after the values `leading`; `inserted` hears of each
    /// statement's last rowid and its number of rows.
    func run(
        _ rows: RemoteValues, on db: Database, after leading: [SQLValue] = [],
        inserted: (Int64, Int) -> Void = { _, _ in }
    ) throws(SQLiteError) {
        var bound = leading
        bound.reserveCapacity(leading.count + 2 * Self.rowsPerStatement)
        var remaining = rows.count
        var batch = 0
        for (key, value) in rows {
            if batch == 0 { batch = Self.rowsPerStatement <= remaining ? Self.rowsPerStatement : 1 }
            bound.append(.text(key))
            bound.append(.text(value))
            guard bound.count == leading.count + 2 * batch else { continue }
            try db.cachedStatement(batch == 1 ? single : self.batch).runBorrowing(bound)
            inserted(db.lastInsertRowID, batch)
            remaining -= batch
            batch = 0
            bound.removeSubrange(leading.count...)
        }
    }
}

/// A value set's rows as they were just stored, held in memory in key order (SQLite's BINARY
/// collation: the bytes), so that an activation in the same transaction merges them without
/// reading them back (``StateStore/valueChanges(from:to:withValues:)``). The texts are the
/// document's own, not copies.
struct HeldSet {
    let id: Int64?
    let values: RemoteValues

    var count: Int { values.count }

    /// The row at `position` in key order.
    subscript(position: Int) -> (key: String, value: String) { values[position] }
}
