import RCCore

/// The fetch loop's writes: the stale flag, a fetch outcome (with its activation under
/// `Activation=immediate`, in the same transaction), a manual activation, and the rebase of fetch
/// times after the wall clock stepped back. Each is one transaction.
extension StateStore {
    /// Sets the stale flag. A flag already set keeps its first reason and time: status then says
    /// how long the config has really been stale. Returns `true` when it was not set before.
    @discardableResult
    public func markStale(reason: String?, at now: Timestamp) throws(StoreError) -> Bool {
        // Whatever the caller passes (a push's CONFIG_STATE, --reason), the database keeps a bounded text.
        let reason = reason.map(StoredText.reason)
        return try write {
            let wasSet = try staleFlag().isSet
            if !wasSet {
                try db.run(
                    "UPDATE stale SET is_set = 1, reason = ?, since = ?",
                    [reason.map(SQLValue.text) ?? .null, .integer(now.milliseconds)])
                try appendEvent(
                    .staleSet, at: now, detail: .object([("reason", reason.map(JSONValue.string) ?? .null)]))
            }
            return !wasSet
        }
    }

    /// Moves every stored fetch time `step` earlier, for a wall clock that stepped back behind
    /// them: waits and intervals then run from the device's new now, as long as they were meant to.
    public func rebaseFetchTimes(back step: Duration, at now: Timestamp) throws(StoreError) {
        try write {
            try db.run(
                """
                UPDATE fetch_state SET last_attempt_at = last_attempt_at - ?1, last_success_at = last_success_at - ?1,
                    throttle_until = throttle_until - ?1, next_fetch_at = next_fetch_at - ?1
                """, [.integer(step.milliseconds)])
            try appendEvent(
                .clockSteppedBack, at: now, detail: .object([("milliseconds", .integer(step.milliseconds))]))
        }
    }

    /// Records a fetch outcome in one transaction. A successful fetch (`update` or `noChange`)
    /// clears the stale flag and the backoff; with `activate`, an update is also activated in the
    /// same transaction, so a crash leaves either the old or the new snapshot, whole.
    @discardableResult
    /// `withValues`: the activation also carries each changed key's values (``Activation/changes``).
    public func recordFetch(
        _ record: FetchRecord, at now: Timestamp, activate: Bool, recording: ActivationRecording? = nil,
        withValues: Bool = false
    ) throws(StoreError) -> Activation? {
        // A big document's transaction and reader file run with SQLite's caches bounded tighter.
        var big = false
        if case let .update(values, _, _) = record {
            var bytes = 0
            for (key, value) in values { bytes += key.utf8.count + value.utf8.count }
            big = bytes > Database.bigDocumentBytes
        }
        if big { Database.limitCacheMemory(Database.bigDocumentCacheMemoryLimit) }
        defer { if big { Database.limitCacheMemory() } }
        return try write {
            let at = SQLValue.integer(now.milliseconds)
            switch record {
            case let .update(values, templateVersion, etag):
                // A new value set; the one fetched before goes unless a history entry names it.
                let set = try newValueSet()
                let insert = try db.prepare("INSERT INTO set_values (set_id, key, value) VALUES (?, ?, ?)")
                for (key, value) in values { try insert.runBorrowing([set, .text(key), .text(value)]) }
                try db.run(
                    """
                    INSERT OR REPLACE INTO snapshots (kind, template_version, etag, fetched_at, pending, set_id)
                    VALUES ('fetched', ?, ?, ?, 1, ?)
                    """, [templateVersion.map(SQLValue.text) ?? .null, etag.map(SQLValue.text) ?? .null, at, set])
                try dropUnusedValueSets()
                try succeed(status: .success, at: now)
                try appendEvent(
                    .fetched, at: now,
                    detail: .object([
                        ("templateVersion", templateVersion.map(JSONValue.string) ?? .null),
                        ("keys", .integer(Int64(values.count))),
                    ]))
                let activation: Activation? =
                    if !activate {
                        nil
                    } else if let recording {
                        try activateRecordedPending(at: now, recording: recording, withValues: withValues)
                    } else {
                        try activatePending(at: now, withValues: withValues)
                    }
                try clearStale(at: now)
                return activation
            case .noChange:
                try succeed(status: .noChange, at: now)
                try clearStale(at: now)
                return nil
            case let .failure(fullError, backoffStep, nextAttempt, throttledUntil):
                // A server's error body can be as long as it likes; status and the event keep its start.
                let error = StoredText.error(fullError)
                try db.run(
                    "UPDATE fetch_state SET last_attempt_at = ?, status = ?, error = ?, backoff_step = ?, next_fetch_at = ?, throttle_until = ?",
                    [
                        at,
                        .text(throttledUntil == nil ? FetchStatus.failure.rawValue : FetchStatus.throttled.rawValue),
                        .text(error),
                        .integer(Int64(backoffStep)), nextAttempt.map { .integer($0.milliseconds) } ?? .null,
                        throttledUntil.map { .integer($0.milliseconds) } ?? .null,
                    ])
                try appendEvent(.fetchFailed, at: now, detail: .object([("error", .string(error))]))
                try bumpCounter(
                    Self.fetchCounterPrefix + (throttledUntil == nil ? FetchStatus.failure : .throttled).rawValue)
                return nil
            case let .throttled(until):
                try db.run(
                    "UPDATE fetch_state SET status = 'throttled', throttle_until = ?, next_fetch_at = ?",
                    [.integer(until.milliseconds), .integer(until.milliseconds)])
                try bumpCounter(Self.fetchCounterPrefix + FetchStatus.throttled.rawValue)
                return nil
            }
        }
    }

    private func succeed(status: FetchStatus, at now: Timestamp) throws(SQLiteError) {
        try bumpCounter(Self.fetchCounterPrefix + status.rawValue)
        try db.run(
            """
            UPDATE fetch_state SET last_attempt_at = ?1, last_success_at = ?1, status = ?2, error = NULL,
                backoff_step = 0, throttle_until = NULL, next_fetch_at = NULL
            """, [.integer(now.milliseconds), .text(status.rawValue)])
    }

    /// Clears the stale flag after a successful fetch; the event comes last, after what the fetch did.
    private func clearStale(at now: Timestamp) throws(SQLiteError) {
        guard try staleFlag().isSet else { return }
        try db.run("UPDATE stale SET is_set = 0, reason = NULL, since = NULL")
        try appendEvent(.staleCleared, at: now, detail: .object([]))
    }

    /// Makes the fetched snapshot active. Returns `nil` when nothing was pending.
    @discardableResult
    public func activate(at now: Timestamp, withValues: Bool = false) throws(StoreError) -> Activation? {
        try write { try activatePending(at: now, withValues: withValues) }
    }

    func activatePending(at now: Timestamp, withValues: Bool) throws(SQLiteError) -> Activation? {
        let pending = try db.query("SELECT template_version FROM snapshots WHERE kind = 'fetched' AND pending = 1") {
            $0.text(0)
        }
        guard let templateVersion = pending.first else { return nil }
        // A change is a change of the value `get` returns (remote, else default): a key whose value
        // stays while its source moves between remote and default is not one. The fetched keys, then
        // the active keys that are no longer fetched: two walks in key order that SQLite merges,
        // rather than a union of both key sets sorted in a temporary b-tree and joined back to both
        // tables (25 M instructions instead of 47 M for 3,000 keys).
        let changedSQL = """
            SELECT f.key FROM fetched_values f
                LEFT JOIN active_values a ON a.key = f.key
                LEFT JOIN defaults d ON d.key = f.key
            WHERE coalesce(a.value, d.value) IS NOT f.value
            UNION ALL
            SELECT a.key FROM active_values a
                LEFT JOIN defaults d ON d.key = a.key
            WHERE NOT EXISTS (SELECT 1 FROM fetched_values f WHERE f.key = a.key) AND a.value IS NOT d.value
            """
        let changedKeys: [String]
        var changes: [KeyChange]?
        if withValues {
            // The values `get` saw and will see (remote, else default), in the same statement, so
            // nobody reads the tables again to tell the hooks.
            let rows = try db.query(
                """
                WITH changed(key) AS (\(changedSQL))
                SELECT c.key, coalesce(a.value, d.value), coalesce(f.value, d.value),
                    CASE WHEN f.value IS NOT NULL THEN 1 WHEN d.value IS NOT NULL THEN 0 END
                FROM changed c
                    LEFT JOIN active_values a ON a.key = c.key
                    LEFT JOIN fetched_values f ON f.key = c.key
                    LEFT JOIN defaults d ON d.key = c.key
                ORDER BY 1
                """
            ) { row in
                KeyChange(
                    key: row.text(0) ?? "", old: row.text(1), new: row.text(2),
                    source: row.integer(3).map { $0 == 1 ? .remote : .default })
            }
            changes = rows
            changedKeys = rows.map(\.key)
        } else {
            changedKeys = try db.query(changedSQL + " ORDER BY 1") { $0.text(0) ?? "" }
        }
        try db.run("DELETE FROM active_values")
        // OR IGNORE: no row can conflict (the table was just emptied; the set has each key once), and
        // a statement that cannot abort needs no statement journal, which SQLite would otherwise
        // keep for these 3,000 rows in a temporary file (an open, ~70 writes and an unlink per activation).
        try db.run("INSERT OR IGNORE INTO active_values (key, value) SELECT key, value FROM fetched_values")
        try db.run(
            """
            INSERT OR REPLACE INTO snapshots (kind, template_version, etag, fetched_at, activated_at, pending)
            SELECT 'active', template_version, etag, fetched_at, ?, 0 FROM snapshots WHERE kind = 'fetched'
            """, [.integer(now.milliseconds)])
        try db.run("UPDATE snapshots SET pending = 0 WHERE kind = 'fetched'")
        try appendEvent(
            .activated, at: now,
            detail: .object([
                ("changedKeys", .array(changedKeys.map(JSONValue.string))),
                ("templateVersion", templateVersion.map(JSONValue.string) ?? .null),
            ]))
        return Activation(changedKeys: changedKeys, templateVersion: templateVersion, changes: changes)
    }
}
