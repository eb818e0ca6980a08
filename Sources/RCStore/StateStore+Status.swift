import RCCore

/// The store's status (what `status`, the daemon's rounds and the device report read) and the
/// version that tells a reader whether the status it kept is still the store's.
extension StateStore {
    /// Where the database is in its history: it changes with every write of this store (its
    /// connection's change count) and every commit of another process (`PRAGMA data_version`).
    /// Two equal versions read the same ``status()``, so a reader may keep the status it read.
    public struct Version: Sendable, Equatable {
        let own: Int64
        let others: Int64
    }

    /// The database's ``Version`` now: one small statement.
    public func version() throws(StoreError) -> Version {
        try Self.wrap { () throws(SQLiteError) in Version(own: db.totalChanges, others: try dataVersion()) }
    }

    /// Other processes' commits, as this connection counts them (`PRAGMA data_version`).
    func dataVersion() throws(SQLiteError) -> Int64 {
        try db.query("PRAGMA data_version") { $0.integer(0) ?? 0 }.first ?? 0
    }

    /// Five statements in one read transaction (seven in the reader file, whose snapshots' keys are
    /// counted): a status of one commit, never parts of two.
    public func status() throws(StoreError) -> StoreStatus {
        statusReads += 1
        return try Self.wrap { () throws(SQLiteError) in try db.reading(readStatus) }
    }

    private func readStatus() throws(SQLiteError) -> StoreStatus {
        let deviceId = try db.query("SELECT value FROM meta WHERE key = 'device_id'") { $0.text(0) }.first ?? nil
        let stale = try staleFlag()
        // A record's key count in the state database; elsewhere (the reader file, an older state
        // database a reader opened) the snapshot's values are rows, counted.
        let keysColumn = holdsValueSets ? "(SELECT keys FROM value_sets WHERE id = snapshots.set_id)" : "NULL"
        func snapshot(_ kind: String, table: String) throws(SQLiteError) -> (SnapshotInfo, Bool) {
            let row = try db.query(
                "SELECT template_version, etag, \(kind == "active" ? "activated_at" : "fetched_at"), pending, \(keysColumn) FROM snapshots WHERE kind = ?",
                [.text(kind)]
            ) { row in
                (
                    SnapshotInfo(
                        templateVersion: row.text(0), etag: row.text(1), at: row.integer(2).map(Timestamp.init),
                        keys: Int(row.integer(4) ?? 0)), row.integer(3) == 1
                )
            }.first
            var (info, pending) = row ?? (SnapshotInfo(templateVersion: nil, etag: nil, at: nil, keys: 0), false)
            if !holdsValueSets {
                info.keys = Int(try db.query("SELECT count(*) FROM \(table)") { $0.integer(0) ?? 0 }.first ?? 0)
            }
            return (info, pending)
        }
        let (active, _) = try snapshot("active", table: "active_values")
        let (fetched, pending) = try snapshot("fetched", table: "fetched_values")
        return try db.query(
            "SELECT last_attempt_at, last_success_at, status, error, throttle_until, backoff_step, next_fetch_at FROM fetch_state"
        ) { row in
            StoreStatus(
                deviceId: deviceId, stale: stale, active: active, fetched: fetched, pending: pending,
                lastAttempt: row.integer(0).map(Timestamp.init), lastSuccess: row.integer(1).map(Timestamp.init),
                lastStatus: row.text(2).flatMap(FetchStatus.init(rawValue:)), lastError: row.text(3),
                throttledUntil: row.integer(4).map(Timestamp.init), backoffStep: Int(row.integer(5) ?? 0),
                nextFetchAt: row.integer(6).map(Timestamp.init))
        }.first!
    }
}
