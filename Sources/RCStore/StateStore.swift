import Glibc
import RCCore

/// The agent's durable state in one SQLite database: defaults, the fetched and the
/// active snapshot, fetch metadata, the stale flag, the device id and a bounded event log.
///
/// Each logical change is one `BEGIN IMMEDIATE` transaction. Writers use `synchronous=FULL`
/// so a committed stale flag or snapshot survives power loss, not just a crash.
/// A `StateStore` is not thread-safe: the daemon keeps its one writer inside an actor.
public final class StateStore {
    public let path: String
    let db: Database
    /// Events appended by the transaction under way, and those of committed transactions that
    /// ``takeCommittedEvents()`` has not handed out yet: the writer learns what it logged without
    /// reading the log back.
    var uncommitted: [StoredEvent] = []
    var committed: [StoredEvent] = []
    /// The reader file this writer keeps up to date (``maintainReaderFile(at:onFailure:)``), whether a
    /// committed change has not reached it yet, and who hears that writing it failed.
    var readerPath: String?
    var readerStale = false
    /// Who the state directory belongs to when root writes for the daemon's user (`mark-stale` with
    /// the daemon stopped): the reader file is then written with that user's file-system ids.
    var fileOwner: (uid_t, gid_t)?
    var readerFailing = false
    var readerFailure: ((StoreError) -> Void)?

    /// The schema version this build writes (`PRAGMA user_version`).
    public static var schemaVersion: Int { Schema.currentVersion }

    /// The event log keeps this many newest entries.
    public static let eventLimit: Int64 = 1_000
    /// ... and at most this many bytes of them (kind and detail), the newest event always.
    public static let eventBytesLimit: Int64 = 1 << 20

    private init(path: String, db: Database) {
        self.path = path
        self.db = db
    }

    /// Opens the database for reading, or returns `nil` when it does not exist yet.
    /// Used by the CLI: it never creates or migrates anything. A database this user cannot see
    /// (the state directory or the file refuses it) throws: it is not "not created yet".
    public static func openForReading(path: String) throws(StoreError) -> StateStore? {
        try openForReading(path: path, mode: .readOnly)
    }

    static func openForReading(path: String, mode: Database.Mode) throws(StoreError) -> StateStore? {
        guard try exists(path: path) else { return nil }
        let store = try wrap { () throws(SQLiteError) in
            try Database.checkFile(path)  // an empty or truncated file is damage here, not "no database yet"
            return StateStore(path: path, db: try Database(path: path, mode: mode))
        }
        let version = try store.userVersion()
        if version > Schema.currentVersion {
            throw .schemaTooNew(found: version, supported: Schema.currentVersion, path: path)
        }
        return version == 0 ? nil : store
    }

    /// Opens (creating if needed) and migrates the database for writing.
    /// `owner`: who a new database file is given to (root creating it for the daemon's user).
    public static func openForWriting(path: String, owner: (uid_t, gid_t)? = nil) throws(StoreError) -> StateStore {
        let store = try wrap { () throws(SQLiteError) in
            // Only a missing file is a new database, never an empty one. A new one is born private
            // (0640, see ``makePrivate(_:owner:)``): no reader gets in before a chmod.
            if !(try createPrivate(path, owner: owner)) { try Database.checkFile(path) }
            return StateStore(path: path, db: try Database(path: path, mode: .readWrite))
        }
        store.fileOwner = owner
        try wrap { () throws(SQLiteError) in
            try store.db.execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON")
        }
        try store.migrate()
        return store
    }

    /// Creates an empty file at `path` with mode 0640 and returns `true`; `false` when something is there.
    private static func createPrivate(_ path: String, owner: (uid_t, gid_t)?) throws(SQLiteError) -> Bool {
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o640)
        if fd < 0 {
            if errno == EEXIST { return false }
            throw SQLiteError(
                code: 14 /* SQLITE_CANTOPEN */, message: SystemError("create \(path)").description, sql: nil)
        }
        _ = fchmod(fd, 0o640)  // whatever the umask
        if let (uid, gid) = owner { _ = fchown(fd, uid, gid) }
        close(fd)
        return true
    }

    /// `false` only when nothing is at `path` (ENOENT). Any other failure throws: EACCES on a
    /// state directory at 0700 would otherwise read as "no database yet" and the CLI would serve
    /// the defaults file as if no fetch had ever happened.
    private static func exists(path: String) throws(StoreError) -> Bool {
        var info = stat()
        if lstat(path, &info) == 0 { return true }
        let failure = errno
        if failure == ENOENT { return false }
        throw .sqlite(
            SQLiteError(
                code: 14 /* SQLITE_CANTOPEN */, message: SystemError("stat \(path)", errno: failure).description,
                sql: nil))
    }

    private func userVersion() throws(StoreError) -> Int {
        try Self.wrap { () throws(SQLiteError) in
            Int(try db.query("PRAGMA user_version") { $0.integer(0) ?? 0 }.first ?? 0)
        }
    }

    private func migrate() throws(StoreError) {
        let version = try userVersion()
        if version > Schema.currentVersion {
            throw .schemaTooNew(found: version, supported: Schema.currentVersion, path: path)
        }
        guard version < Schema.currentVersion else { return }
        try write {
            for (index, migration) in Schema.migrations.enumerated().dropFirst(version) {
                try db.execute(migration)
                try db.execute("PRAGMA user_version = \(index + 1)")
            }
            try db.run("INSERT OR IGNORE INTO meta (key, value) VALUES ('device_id', ?)", [.text(DeviceID.generate())])
        }
    }

    // MARK: - Reading

    /// The value of `key`: the active snapshot's, else the default's, else `nil`.
    public func value(forKey key: String) throws(StoreError) -> ConfigValue? {
        try Self.wrap { () throws(SQLiteError) in
            try db.query(
                """
                SELECT value, 1 FROM active_values WHERE key = ?1
                UNION ALL SELECT value, 0 FROM defaults WHERE key = ?1 LIMIT 1
                """, [.text(key)]
            ) { row in
                ConfigValue(key: key, text: row.text(0) ?? "", source: row.integer(1) == 1 ? .remote : .default)
            }.first
        }
    }

    /// Every key of the active snapshot and the defaults, resolved, sorted by key.
    public func allValues(prefix: String = "") throws(StoreError) -> [ConfigValue] {
        try Self.wrap { () throws(SQLiteError) in
            try db.query(
                """
                SELECT key, value, 1 FROM active_values WHERE substr(key, 1, length(?1)) = ?1
                UNION ALL
                SELECT key, value, 0 FROM defaults WHERE substr(key, 1, length(?1)) = ?1
                    AND key NOT IN (SELECT key FROM active_values)
                ORDER BY 1
                """, [.text(prefix)]
            ) { row in
                ConfigValue(
                    key: row.text(0) ?? "", text: row.text(1) ?? "", source: row.integer(2) == 1 ? .remote : .default)
            }
        }
    }

    /// How many times ``status()`` ran on this store (seven statements each): for the tests that
    /// count the daemon's reads.
    public internal(set) var statusReads = 0

    func staleFlag() throws(SQLiteError) -> StaleFlag {
        try db.query("SELECT is_set, reason, since FROM stale") { row in
            StaleFlag(isSet: row.integer(0) == 1, reason: row.text(1), since: row.integer(2).map(Timestamp.init))
        }.first ?? .clear
    }

    /// Runs `PRAGMA integrity_check`; `nil` when the database is sound, else SQLite's findings.
    public func integrityProblems() throws(StoreError) -> String? {
        let lines = try Self.wrap { () throws(SQLiteError) in
            try db.query("PRAGMA integrity_check") { $0.text(0) ?? "" }
        }
        return lines == ["ok"] ? nil : lines.joined(separator: "; ")
    }

    // MARK: - Writing

    /// Replaces the defaults with `values` (setDefaults replaces the whole map).
    public func replaceDefaults(_ values: [String: String]) throws(StoreError) {
        try write {
            try db.run("DELETE FROM defaults")
            let insert = try db.prepare("INSERT INTO defaults (key, value) VALUES (?, ?)")
            for (key, value) in values {
                try insert.bind([.text(key), .text(value)])
                while try insert.step() != nil {}
            }
        }
    }

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
    public func recordFetch(_ record: FetchRecord, at now: Timestamp, activate: Bool, withValues: Bool = false)
        throws(StoreError) -> Activation?
    {
        try write {
            let at = SQLValue.integer(now.milliseconds)
            switch record {
            case let .update(values, templateVersion, etag):
                try db.run("DELETE FROM fetched_values")
                let insert = try db.prepare("INSERT INTO fetched_values (key, value) VALUES (?, ?)")
                for (key, value) in values {
                    try insert.bind([.text(key), .text(value)])
                    while try insert.step() != nil {}
                }
                try db.run(
                    """
                    INSERT OR REPLACE INTO snapshots (kind, template_version, etag, fetched_at, pending)
                    VALUES ('fetched', ?, ?, ?, 1)
                    """, [templateVersion.map(SQLValue.text) ?? .null, etag.map(SQLValue.text) ?? .null, at])
                try succeed(status: .success, at: now)
                try appendEvent(
                    .fetched, at: now,
                    detail: .object([
                        ("templateVersion", templateVersion.map(JSONValue.string) ?? .null),
                        ("keys", .integer(Int64(values.count))),
                    ]))
                let activation = activate ? try activatePending(at: now, withValues: withValues) : nil
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
                return nil
            case let .throttled(until):
                try db.run(
                    "UPDATE fetch_state SET status = 'throttled', throttle_until = ?, next_fetch_at = ?",
                    [.integer(until.milliseconds), .integer(until.milliseconds)])
                return nil
            }
        }
    }

    private func succeed(status: FetchStatus, at now: Timestamp) throws(SQLiteError) {
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
        // stays while its source moves between remote and default is not one.
        let changedSQL = """
            SELECT u.key FROM (SELECT key FROM fetched_values UNION SELECT key FROM active_values) u
                LEFT JOIN active_values a ON a.key = u.key
                LEFT JOIN fetched_values f ON f.key = u.key
                LEFT JOIN defaults d ON d.key = u.key
            WHERE coalesce(a.value, d.value) IS NOT coalesce(f.value, d.value)
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
        try db.run("INSERT INTO active_values (key, value) SELECT key, value FROM fetched_values")
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

    /// A small named value kept across restarts (realtime stream backoff and the like).
    public func note(_ key: String) throws(StoreError) -> String? {
        try wrap { () throws(SQLiteError) in
            try db.query("SELECT value FROM meta WHERE key = ?", [.text("note:" + key)]) { $0.text(0) }.first ?? nil
        }
    }

    public func setNote(_ key: String, _ value: String?) throws(StoreError) {
        try write(readerVisible: false) {
            if let value {
                try db.run(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                    [.text("note:" + key), .text(StoredText.note(value))])
            } else {
                try db.run("DELETE FROM meta WHERE key = ?", [.text("note:" + key)])
            }
        }
    }

    // MARK: - Plumbing

    /// `readerVisible`: whether the change can touch what the reader file holds; after such a
    /// commit the reader file is rewritten before this returns (so a `get` after it sees the change).
    func write<T>(readerVisible: Bool = true, _ body: () throws -> T) throws(StoreError) -> T {
        uncommitted = []
        // Events of a transaction that rolled back never happened.
        defer { uncommitted = [] }
        do {
            let rowsBefore = db.totalChanges
            let result = try db.transaction(body)
            committed += uncommitted
            // A transaction that changed no row (nothing to remove, a flag already set) changed nothing.
            if readerVisible && db.totalChanges != rowsBefore { readerStale = true } else { touchReaderFile() }
            refreshReaderFile()
            return result
        } catch let error as SQLiteError {
            throw .sqlite(error)
        } catch let error as StoreError {
            throw error
        } catch {
            preconditionFailure("unexpected error in a store transaction: \(error)")
        }
    }

    static func wrap<T>(_ body: () throws(SQLiteError) -> T) throws(StoreError) -> T {
        do { return try body() } catch { throw .sqlite(error) }
    }

    private func wrap<T>(_ body: () throws(SQLiteError) -> T) throws(StoreError) -> T {
        try Self.wrap(body)
    }
}
