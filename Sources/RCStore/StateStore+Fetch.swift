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
            for (key, value) in values {
                bytes += key.utf8.count + value.utf8.count
            }
            big = bytes > Database.bigDocumentBytes
            // Values over the staging database's limit: the reader file is built in place at once.
            // Trying the staging first made a big value whole in memory (twice: read, then its
            // record) only to fail at the limit (a 4 MB value: 3.24x the document at the peak, 3.01x),
            // and copied many small ones up to the limit for nothing.
            if bytes > Self.stagingLimit { readerTooBig = true }
        }
        if big { Database.limitCacheMemory(Database.bigDocumentCacheMemoryLimit) }
        defer { if big { Database.limitCacheMemory() } }
        return try write {
            let at = SQLValue.integer(now.milliseconds)
            switch record {
            case let .update(values, templateVersion, etag):
                // A new value set; the one fetched before goes unless a history entry names it.
                let set = try newValueSet(values)
                try db.run(
                    """
                    INSERT OR REPLACE INTO snapshots (kind, template_version, etag, fetched_at, pending, set_id)
                    VALUES ('fetched', ?, ?, ?, 1, ?)
                    """, [templateVersion.map(SQLValue.text) ?? .null, etag.map(SQLValue.text) ?? .null, at, set])
                setsMayBeUnused = true
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
                        try activateRecordedPending(
                            at: now, recording: recording, withValues: withValues)
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

    /// The merge reads the set activated from ``storedSet`` when this transaction stored it.
    func activatePending(at now: Timestamp, withValues: Bool) throws(SQLiteError)
        -> Activation?
    {
        let pending = try db.query(
            "SELECT template_version, set_id FROM snapshots WHERE kind = 'fetched' AND pending = 1"
        ) { ($0.text(0), SQLValue.of($0.integer(1))) }
        guard let (templateVersion, fetchedSet) = pending.first else { return nil }
        let (changedKeys, changes) = try valueChanges(
            from: try activeValueSet(), to: fetchedSet, withValues: withValues)
        // The active snapshot names the fetched one's value set: nothing is copied.
        try db.run(
            """
            INSERT OR REPLACE INTO snapshots (kind, template_version, etag, fetched_at, activated_at, pending, set_id)
            SELECT 'active', template_version, etag, fetched_at, ?, 0, set_id FROM snapshots WHERE kind = 'fetched'
            """, [.integer(now.milliseconds)])
        try db.run("UPDATE snapshots SET pending = 0 WHERE kind = 'fetched'")
        // The set active before goes, unless a history entry names it.
        setsMayBeUnused = true
        try appendEvent(
            .activated, at: now,
            detail: .object([
                ("changedKeys", .array(changedKeys.map(JSONValue.string))),
                ("templateVersion", templateVersion.map(JSONValue.string) ?? .null),
            ]))
        return Activation(changedKeys: changedKeys, templateVersion: templateVersion, changes: changes)
    }

    /// The active snapshot's value set (`.null`: no remote values are active).
    func activeValueSet() throws(SQLiteError) -> SQLValue {
        SQLValue.of(try db.query("SELECT set_id FROM snapshots WHERE kind = 'active'") { $0.integer(0) }.first ?? nil)
    }

    /// The keys whose value `get` returns (remote, else default) differs when value set `old` is
    /// replaced by value set `new` (`.null`: no remote values), in key order as SQLite's BINARY
    /// collation sorts them; with `withValues`, each with its value before and after.
    ///
    /// One merge of the two sets' records read in place in key order (``storedRecord(_:_:)``, or
    /// `new` from ``storedSet`` when this transaction stored it), comparing keys and values where
    /// they lie: a key in both sets costs no lookup and no copy unless its value changed; a key in
    /// one of them is compared with its default. The join that did this by three index seeks a key,
    /// and the copy of the set into a table of its own, were two thirds of a 3,000-key activation;
    /// reading back the values just stored, a fifth of the merge (BENCHMARKS.md).
    func valueChanges(from old: SQLValue, to new: SQLValue, withValues: Bool)
        throws(SQLiteError) -> (keys: [String], changes: [KeyChange]?)
    {
        let held = storedSet.flatMap { $0.id == new.integer ? $0 : nil }
        var before = try storedRecord(old, "old")
        defer { before.close() }
        var after = held == nil ? try storedRecord(new, "new") : nil
        defer { after?.close() }
        var heldPosition = 0
        func nextNew() throws(SQLiteError) -> NewEntry? {
            guard let held else { return try after?.reader.next().map(NewEntry.stored) }
            guard heldPosition < held.count else { return nil }
            defer { heldPosition += 1 }
            return .held(held[heldPosition])
        }
        var keys: [String] = []
        var changes: [KeyChange] = []
        // Texts are copied out only for what is returned: without values, the changed keys alone
        // (a 4 MB value is compared in place, never copied).
        func change(
            _ key: String, old: @autoclosure () -> String?, new: @autoclosure () -> String?, _ source: ValueSource?
        ) {
            keys.append(key)
            if withValues { changes.append(KeyChange(key: key, old: old(), new: new(), source: source)) }
        }
        // Taken once for the whole merge: through the cache at each key, a full cache (which never
        // evicts) would prepare it again for every key on one side only.
        let defaults = try db.cachedStatement("SELECT value FROM defaults WHERE key = ?")
        func defaultValue(_ key: String) throws(SQLiteError) -> String? {
            defer { defaults.reset() }
            try defaults.bind([.text(key)])
            return try defaults.step()?.text(0)
        }
        // The remote values that differ, whatever the defaults say: the reader file's `active_values`
        // changes by these alone (``SetDelta``).
        var delta = SetDelta(from: old.integer, to: new.integer)
        var a = try before.reader.next()
        var b = try nextNew()
        while a != nil || b != nil {
            let order = if let a, let b { b.keyOrder(of: a) } else { a == nil ? 1 : -1 }
            if order == 0, let was = a, let now = b {
                if !now.hasValue(was.value) {
                    let key = now.key
                    change(key, old: was.valueText, new: now.value, .remote)
                    delta.add(key)
                }
                a = try before.reader.next()
                b = try nextNew()
                delta.rows += 1
            } else if order < 0, let was = a {
                // Gone from the remote values: `get` falls back to the default, if any.
                let key = was.keyText
                let fallback = try defaultValue(key)
                if !(fallback.map { NewEntry.held((key, $0)).hasValue(was.value) } ?? false) {
                    change(key, old: was.valueText, new: fallback, fallback == nil ? nil : .default)
                }
                delta.add(key)
                a = try before.reader.next()
            } else if let now = b {
                // New among the remote values: it was its default, if any.
                let key = now.key
                let fallback = try defaultValue(key)
                if !(fallback.map { now.hasValue($0) } ?? false) {
                    change(key, old: fallback, new: now.value, .remote)
                }
                delta.add(key)
                b = try nextNew()
                delta.rows += 1
            }
        }
        lastSetDelta = delta
        return (keys, withValues ? changes : nil)
    }
}

/// The merge's current entry of the set activated: read from its record, or held in memory.
private enum NewEntry {
    case stored(ValueRecord.Entry)
    case held((key: String, value: String))

    var key: String {
        switch self {
        case let .stored(entry): entry.keyText
        case let .held(entry): entry.key
        }
    }

    var value: String {
        switch self {
        case let .stored(entry): entry.valueText
        case let .held(entry): entry.value
        }
    }

    /// How `entry`'s key orders against this entry's, as SQLite's BINARY collation does:
    /// negative, zero or positive.
    func keyOrder(of entry: ValueRecord.Entry) -> Int {
        switch self {
        case let .stored(own): return ValueRecord.Reader.order(entry.key, own.key)
        case let .held(own):
            var key = own.key
            return key.withUTF8 { ValueRecord.Reader.order(entry.key, UnsafeRawBufferPointer($0)) }
        }
    }

    /// Whether this entry's value is `bytes`, byte for byte.
    func hasValue(_ bytes: UnsafeRawBufferPointer) -> Bool {
        switch self {
        case let .stored(own): return ValueRecord.Reader.order(own.value, bytes) == 0
        case let .held(own):
            var value = own.value
            return value.withUTF8 { ValueRecord.Reader.order(UnsafeRawBufferPointer($0), bytes) == 0 }
        }
    }

    /// Whether this entry's value is `text`, byte for byte.
    func hasValue(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { hasValue(UnsafeRawBufferPointer($0)) }
    }
}
