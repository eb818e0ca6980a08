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

    /// Stores `values` as a new value set, one record (``ValueRecord``), and returns its id. The
    /// values are kept as ``storedSet``, for an activation in the same transaction to merge from
    /// memory and a reader file built after it to copy from there.
    ///
    /// A record up to ``Database/bigDocumentBytes`` (a 3,000-key template's is about 100 KiB) is
    /// made in memory and bound whole; a bigger one is made to its size and written a chunk at a time
    /// (``ValueRecord/write(_:toSet:on:)``), never whole in memory. That way costs a statement SQLite
    /// compiles for the blob's handle at each write.
    func newValueSet(_ values: RemoteValues) throws(SQLiteError) -> SQLValue {
        let size = ValueRecord.size(of: values)
        let keys = SQLValue.integer(Int64(values.count))
        var id: Int64 = 0
        if size <= Database.bigDocumentBytes {
            let insert = try db.cachedStatement("INSERT INTO value_sets (keys, data) VALUES (?, ?) RETURNING id")
            defer { insert.reset() }
            try insert.bind([keys])
            var written = false
            // Room for the whole record and a length more: handed over once.
            try ValueRecord.encode(values, chunk: size + 16) { (record, _) throws(SQLiteError) in
                try insert.bindBorrowedBlob(record, at: 2)
                id = try insert.step()?.integer(0) ?? 0
                written = true
            }
            if !written {  // no keys: an empty record
                try insert.bindBorrowedBlob(UnsafeRawBufferPointer(start: nil, count: 0), at: 2)
                id = try insert.step()?.integer(0) ?? 0
            }
        } else {
            id =
                try db.query(
                    "INSERT INTO value_sets (keys, data) VALUES (?, zeroblob(?)) RETURNING id",
                    [keys, .integer(Int64(size))]
                ) { $0.integer(0) ?? 0 }.first ?? 0
            try ValueRecord.write(values, toSet: id, on: db)
        }
        storedSet = HeldSet(id: id, values: values)
        return .integer(id)
    }

    /// Value set `set`'s record, read in place by a statement of its own for each `side` (two
    /// sides are read at once): ``StoredRecord/read(_:from:on:)``.
    func storedRecord(_ set: SQLValue, _ side: String) throws(SQLiteError) -> StoredRecord {
        try StoredRecord.read(set.integer, from: "value_sets AS \(side)", on: db)
    }

    /// Drops the value sets that neither a snapshot nor a history entry names (few: one per kept
    /// entry and the fetched snapshot), records and all: a few pages each. `NOT EXISTS`, not
    /// `NOT IN`: both tables are a few rows, and `NOT IN` built two temporary b-trees at every fetch
    /// (10% of the daemon's CPU for a small one, BENCHMARKS.md). Run by ``write(readerVisible:_:)``
    /// before it commits, once, when the body set ``setsMayBeUnused``. A set's id is never given
    /// again (`AUTOINCREMENT`).
    func dropUnusedValueSets() throws(SQLiteError) {
        try db.run(
            """
            DELETE FROM value_sets WHERE NOT EXISTS (SELECT 1 FROM history WHERE set_id = value_sets.id)
                AND NOT EXISTS (SELECT 1 FROM snapshots WHERE set_id = value_sets.id)
            """)
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

/// An `INSERT` of a set's keys and values, in their order: ``rowsPerStatement`` rows a statement,
/// the rest one by one, each key and value bound in place, never copied: from a document's
/// ``RemoteValues`` (``Statement/runBorrowing(_:)``) or from a stored record.
struct RowsInsert {
    static let rowsPerStatement = 100
    let single: String
    let batch: String

    /// `insert` (up to `VALUES `) followed by one `row`'s placeholders, or by as many as a batch has.
    init(_ insert: String, row: String) {
        single = insert + row
        batch = single + String(repeating: ", " + row, count: Self.rowsPerStatement - 1)
    }

    /// Inserts `rows` through `db`.
    func run(_ rows: RemoteValues, on db: Database) throws(SQLiteError) {
        var bound: [SQLValue] = []
        bound.reserveCapacity(2 * Self.rowsPerStatement)
        var remaining = rows.count
        var batch = 0
        for (key, value) in rows {
            if batch == 0 { batch = Self.rowsPerStatement <= remaining ? Self.rowsPerStatement : 1 }
            bound.append(.text(key))
            bound.append(.text(value))
            guard bound.count == 2 * batch else { continue }
            try db.cachedStatement(batch == 1 ? single : self.batch).runBorrowing(bound)
            remaining -= batch
            batch = 0
            bound.removeAll(keepingCapacity: true)
        }
    }

    /// Inserts the entries `record` has left through `db`, bound where the record holds them.
    func run(_ record: inout ValueRecord.Reader, on db: Database) throws(SQLiteError) {
        func insert(_ rows: ArraySlice<ValueRecord.Entry>) throws(SQLiteError) {
            let statement = try db.cachedStatement(rows.count == 1 ? single : batch)
            for (index, entry) in rows.enumerated() {
                try statement.bindBorrowedText(entry.key, at: Int32(2 * index + 1))
                try statement.bindBorrowedText(entry.value, at: Int32(2 * index + 2))
            }
            try statement.runToEnd()
        }
        var entries: [ValueRecord.Entry] = []
        entries.reserveCapacity(Self.rowsPerStatement)
        while let entry = try record.next() {
            entries.append(entry)
            guard entries.count == Self.rowsPerStatement else { continue }
            try insert(entries[...])
            entries.removeAll(keepingCapacity: true)
        }
        for index in entries.indices { try insert(entries[index...index]) }
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

/// A value set's record being read: its reader, valid while the statement that read it stays on
/// its row.
struct StoredRecord {
    let statement: Statement?
    var reader: ValueRecord.Reader

    /// Value set `set`'s record in `table` (`value_sets`, under an alias or in an attached
    /// database) on `db`: no keys for a `nil` set or one not stored. The statement stays on its row
    /// while the record is read: the caller ends the read (``close()``).
    static func read(_ set: Int64?, from table: String, on db: Database) throws(SQLiteError) -> StoredRecord {
        guard let set else { return StoredRecord(statement: nil, reader: .empty) }
        let statement = try db.cachedStatement("SELECT keys, data FROM \(table) WHERE id = ?")
        try statement.bind([.integer(set)])
        guard let row = try statement.step() else {
            statement.reset()
            return StoredRecord(statement: nil, reader: .empty)
        }
        return StoredRecord(
            statement: statement, reader: ValueRecord.Reader(row.blob(1), keys: Int(row.integer(0) ?? 0), set: set))
    }

    /// Ends the read: the record's bytes are gone from here on.
    func close() { statement?.reset() }
}
