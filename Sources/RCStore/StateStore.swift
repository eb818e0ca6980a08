import Glibc
import RCCore
import RCSystem

/// The agent's durable state in one SQLite database: defaults, the fetched and the
/// active snapshot, fetch metadata, the stale flag, the device id and a bounded event log.
///
/// Each logical change is one `BEGIN IMMEDIATE` transaction, on the disk before the write returns,
/// so a committed stale flag or snapshot survives power loss, not just a crash (see ``syncLog``).
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
    /// The store's ``Version`` just before and just after its last committed write: a reader that
    /// kept the status of `before`, and knows what the write changed, may move it to `after`
    /// without reading it again (the daemon's stale flag).
    public internal(set) var lastWrite: (before: Version, after: Version)?
    /// Who the state directory belongs to when root writes for the daemon's user (`mark-stale` with
    /// the daemon stopped): the reader file is then written with that user's file-system ids.
    var fileOwner: (uid_t, gid_t)?
    var readerFailing = false
    /// The reader file's empty image, built once (``emptyReaderImage()``).
    var readerImage: [UInt8]?
    /// The reader file's rows, in memory, with the state database attached (``stagingDatabase()``).
    /// A new one (or none) holds nothing known: its mirror goes with it.
    var readerStaging: Database? { didSet { readerMirror = nil } }
    /// What the staging database's value tables hold, when known (``ReaderMirror``): the next
    /// reader file copies them again only if they changed.
    var readerMirror: ReaderMirror?
    /// The remote values that differ between the two value sets of the last activation or
    /// rollback (``SetDelta``): the staging database applies those alone when it holds the first.
    var lastSetDelta: SetDelta?
    /// The value set the write under way stored, its values still in memory: an activation in the
    /// same write merges from them, and a reader file built in place after its commit copies them
    /// from here, when that set is the one activated, instead of reading them back from the state
    /// database. Only for that write: its values are the caller's.
    var storedSet: HeldSet?
    /// How many times the staging database copied the active values whole, and how many times a
    /// reader file's copy took them from ``storedSet``: for the tests.
    var activeValueCopies = 0
    var activeValueCopiesFromMemory = 0
    /// Whether the write under way stopped naming a value set (a snapshot replaced, history
    /// trimmed): it then drops the sets nothing names any more, once, before it commits.
    var setsMayBeUnused = false
    /// Whether a commit leaves its write-ahead log for ``syncLog(_:overlapped:during:)`` to sync (WAL mode).
    var syncsLog = false
    /// Whether this is the state database at schema 8 or later, its value sets stored as records
    /// (``ValueRecord``): not the reader file, whose `active_values` is a table, nor an older state
    /// database a reader opened (its values are rows, read through the views of its schema).
    var holdsValueSets = false
    /// Whether the last reader file was over ``stagingLimit``: the next one is built in place.
    var readerTooBig = false
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

    deinit {
        readerStaging = nil  // closed before the writer's connection, which closes the database last
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
        store.holdsValueSets = mode != .immutable && version >= 8
        return version == 0 ? nil : store
    }

    /// Opens (creating if needed) and migrates the database for writing.
    /// `owner`: who a new database file is given to (root creating it for the daemon's user).
    public static func openForWriting(path: String, owner: (uid_t, gid_t)? = nil) throws(StoreError) -> StateStore {
        Database.limitCacheMemory()
        if !(try exists(path: path)) { try create(path, owner: owner) }
        let store = try wrap { () throws(SQLiteError) in
            // Only a missing file is a new database, never an empty one.
            try Database.checkFile(path)
            return StateStore(path: path, db: try Database(path: path, mode: .readWrite))
        }
        store.fileOwner = owner
        try wrap { () throws(SQLiteError) in
            let mode = try store.db.query("PRAGMA journal_mode=WAL") { $0.text(0) ?? "" }.first
            // In WAL mode the commit leaves its log to ``syncLog``; any other (a file system
            // without shared memory keeps the rollback journal) syncs as it commits.
            store.syncsLog = mode == "wal"
            try store.db.execute(
                "PRAGMA synchronous=\(store.syncsLog ? "NORMAL" : "FULL"); PRAGMA foreign_keys=ON")
        }
        try store.migrate()
        store.holdsValueSets = true
        return store
    }

    /// Puts a new, migrated database at `path`, or leaves the one another process put there first.
    /// It is built under a temporary name, private (0640) and `owner`'s from its first byte, synced,
    /// then linked into place: nobody ever sees an empty file at `path` (which every opener takes
    /// for damage), and two processes creating it at once (the daemon's first start beside
    /// `rcagent mark-stale`) both open the one that was linked first.
    private static func create(_ path: String, owner: (uid_t, gid_t)?) throws(StoreError) {
        // As `owner` when root creates it: the directory is that user's (see asFileOwner).
        try asUser(owner) { () throws(StoreError) in
            var temporary = ""
            let fd = try createTemporary(path + ".new-", mode: 0o640, name: &temporary)
            // The writer keeps its WAL and shared memory files after close (``Database``): these are
            // the temporary name's.
            defer { for suffix in ["", "-wal", "-shm"] { unlink(temporary + suffix) } }
            if let (uid, gid) = owner { _ = fchown(fd.rawValue, uid, gid) }
            // The schema as bytes (``DatabaseImage/fresh()``), then this device's id with no journal
            // and no sync of its own: a failed build is thrown away whole, and the file is synced
            // once, below, before it is linked. Then WAL, while nobody else can have it open:
            // switching a database to WAL takes a lock that a busy handler does not wait for, and two
            // processes opening a new file would race for it.
            let image = try wrap { () throws(SQLiteError) in try DatabaseImage.fresh() }
            guard Posix.writeAll(fd.rawValue, image) else { throw ioError(SystemError("write \(temporary)")) }
            try wrap { () throws(SQLiteError) in
                let fresh = try Database(path: temporary, mode: .readWrite)
                try fresh.execute("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF")
                try fresh.run("INSERT INTO meta (key, value) VALUES ('device_id', ?)", [.text(DeviceID.generate())])
                try fresh.execute("PRAGMA journal_mode=WAL")
            }  // closed here: its WAL checkpointed and removed before the file is linked
            guard fsync(fd.rawValue) == 0 else { throw ioError(SystemError("fsync \(temporary)")) }
            try linkNew(temporary, at: path)
        }
    }

    /// Links the new database `temporary` at `path`, unless another process linked one there first.
    /// A WAL and shared memory left at `path` by a database removed without them (by hand, or a
    /// recovery that could move only part of it aside) go first: SQLite applies a WAL it finds beside
    /// a database that is not empty, whichever database wrote it, and the new one would open with
    /// the old one's pages (its values, its stale flag) or damaged. Under a lock on the directory
    /// that every process creating the database takes: none removes the WAL of the one linked first.
    private static func linkNew(_ temporary: String, at path: String) throws(StoreError) {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        // A directory this user may not list, or a file system without flock(2) for directories,
        // cannot be locked: then without the lock (it only orders creators racing at one instant).
        let lock = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { if lock >= 0 { Glibc.close(lock) } }  // the lock goes with the descriptor
        if lock >= 0 { _ = Posix.retrying { flock(lock, LOCK_EX) } }
        guard !(try exists(path: path)) else { return }
        for suffix in ["-wal", "-shm"] where unlink(path + suffix) != 0 && errno != ENOENT {
            throw ioError(SystemError("remove \(path + suffix), left by a database removed without it"))
        }
        guard Glibc.link(temporary, path) == 0 || errno == EEXIST else {
            throw ioError(SystemError("link \(temporary) to \(path)"))
        }
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

    /// Brings the schema to ``Schema/currentVersion``. The version is read again under the write
    /// lock: another process (a second daemon start, `rcagent mark-stale`) may have migrated the file
    /// between the first read and this one's `BEGIN IMMEDIATE`, and replaying its migrations would
    /// fail on tables that already exist.
    private func migrate() throws(StoreError) {
        guard try migrationsDue() else { return }
        try write {
            guard try migrationsDue() else { return }
            // (A new database is made at the current version, ``create(_:owner:)``.)
            try Schema.migrate(db, from: try userVersion())
            try db.run("INSERT OR IGNORE INTO meta (key, value) VALUES ('device_id', ?)", [.text(DeviceID.generate())])
        }
    }

    /// Whether the schema is older than this build's; throws when it is newer.
    private func migrationsDue() throws(StoreError) -> Bool {
        let version = try userVersion()
        if version > Schema.currentVersion {
            throw .schemaTooNew(found: version, supported: Schema.currentVersion, path: path)
        }
        return version < Schema.currentVersion
    }

    // MARK: - Reading

    /// The value of `key`: the active snapshot's, else the default's, else `nil`.
    public func value(forKey key: String) throws(StoreError) -> ConfigValue? {
        try Self.wrap { () throws(SQLiteError) in
            if holdsValueSets {
                // One read transaction: the record and the defaults of one commit.
                return try db.reading { () throws(SQLiteError) -> ConfigValue? in
                    var record = try storedRecord(try activeValueSet(), "active")
                    defer { record.close() }
                    if let remote = try record.reader.value(of: key) {
                        return ConfigValue(key: key, text: remote, source: .remote)
                    }
                    return try db.query("SELECT value FROM defaults WHERE key = ?", [.text(key)]) {
                        ConfigValue(key: key, text: $0.text(0) ?? "", source: .default)
                    }.first
                }
            }
            return try db.query(
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
            guard holdsValueSets else {
                return try db.query(
                    """
                    SELECT key, value, 1 FROM active_values WHERE substr(key, 1, length(?1)) = ?1
                    UNION ALL
                    SELECT key, value, 0 FROM defaults WHERE substr(key, 1, length(?1)) = ?1
                        AND key NOT IN (SELECT key FROM active_values)
                    ORDER BY 1
                    """, [.text(prefix)]
                ) { row in
                    ConfigValue(
                        key: row.text(0) ?? "", text: row.text(1) ?? "",
                        source: row.integer(2) == 1 ? .remote : .default)
                }
            }
            // The record's keys and the defaults', both in key order, merged: a remote value hides its default.
            return try db.reading { () throws(SQLiteError) -> [ConfigValue] in
                let defaults = try db.query(
                    "SELECT key, value FROM defaults WHERE substr(key, 1, length(?1)) = ?1 ORDER BY key",
                    [.text(prefix)]
                ) { ConfigValue(key: $0.text(0) ?? "", text: $0.text(1) ?? "", source: .default) }
                var record = try storedRecord(try activeValueSet(), "active")
                defer { record.close() }
                var merged: [ConfigValue] = []
                var next = 0
                try ValueRecord.withBytes(of: prefix) { (prefix) throws(SQLiteError) in
                    while let entry = try record.reader.next() {
                        guard entry.key.starts(with: prefix) else { continue }
                        let key = entry.keyText
                        while next < defaults.count, defaults[next].key.precedesByBytes(key) {
                            merged.append(defaults[next])
                            next += 1
                        }
                        if next < defaults.count, defaults[next].key.sameBytes(as: key) { next += 1 }
                        merged.append(ConfigValue(key: key, text: entry.valueText, source: .remote))
                    }
                }
                return merged + defaults[next...]
            }
        }
    }

    /// How many times ``status()`` ran on this store (five statements each in the state database): for the tests that
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

    /// Replaces the defaults with `values` (setDefaults replaces the whole map), unless they are
    /// stored already, byte for byte: a daemon loads the same defaults file at every start and
    /// reload, and rewriting it cost a synced commit and a new reader file each time. Returns
    /// whether anything was written.
    @discardableResult
    public func replaceDefaults(_ values: [String: String]) throws(StoreError) -> Bool {
        if try storesDefaults(values) { return false }
        readerMirror = nil  // the reader file copies them again
        try write {
            try db.run("DELETE FROM defaults")
            let insert = try db.prepare("INSERT INTO defaults (key, value) VALUES (?, ?)")
            for (key, value) in values {
                try insert.bind([.text(key), .text(value)])
                while try insert.step() != nil {}
            }
        }
        return true
    }

    /// Whether the stored defaults are `values`, each key and value the same bytes (`==` on `String`
    /// would take a canonically equivalent spelling for the same text, and keep the old bytes).
    private func storesDefaults(_ values: [String: String]) throws(StoreError) -> Bool {
        let stored = try wrap { () throws(SQLiteError) in
            // BINARY collation: the keys in the order of their bytes.
            try db.query("SELECT key, value FROM defaults ORDER BY key") { ($0.text(0) ?? "", $0.text(1) ?? "") }
        }
        guard stored.count == values.count else { return false }
        let wanted = values.sorted { $0.key.precedesByBytes($1.key) }
        return zip(stored, wanted).allSatisfy { $0.0.sameBytes(as: $1.key) && $0.1.sameBytes(as: $1.value) }
    }

    // MARK: - Plumbing

    /// `readerVisible`: whether the change can touch what the reader file holds; after such a
    /// commit the reader file is rewritten before this returns (so a `get` after it sees the change).
    /// `durable`: whether the commit is on the disk before this returns (``syncLog(_:overlapped:during:)``).
    func write<T>(readerVisible: Bool = true, durable: Bool = true, _ body: () throws -> T) throws(StoreError) -> T {
        // A delta serves the reader file of the transaction that found it, and no later one: one
        // found by a transaction that rolled back names sets that were never committed.
        lastSetDelta = nil
        storedSet = nil
        uncommitted = []
        setsMayBeUnused = false
        // Events of a transaction that rolled back never happened; a set it stored was
        // never committed (its id may be taken again), and one committed is held no longer than
        // the reader file built after it needs it.
        defer {
            storedSet = nil
            uncommitted = []
        }
        do {
            let rowsBefore = db.totalChanges
            var others: Int64 = 0
            let result = try db.transaction {
                // Read under the write lock: no other process can commit until this one has.
                others = try dataVersion()
                let result = try body()
                if setsMayBeUnused { try dropUnusedValueSets() }
                return result
            }
            lastWrite = (Version(own: rowsBefore, others: others), Version(own: db.totalChanges, others: others))
            committed += uncommitted
            // A transaction that changed no row (nothing to remove, a flag already set) changed nothing.
            if readerVisible && db.totalChanges != rowsBefore { readerStale = true } else { touchReaderFile() }
            try syncLog(durable, overlapped: readerStale && readerPath != nil) { refreshReaderFile() }
            return result
        } catch let error as SQLiteError {
            throw .sqlite(error)
        } catch let error as StoreError {
            throw error
        } catch {
            preconditionFailure("unexpected error in a store transaction: \(error)")
        }
    }

    /// Puts the commit just made on the disk, running `work` (the reader file's rebuild) meanwhile,
    /// and returns when both are done. The connection commits with `synchronous=NORMAL` in WAL
    /// mode: SQLite writes the log and makes the commit visible without waiting for the disk, and
    /// this syncs the log as `FULL` would have before the commit returned (not at all when not
    /// `durable`). `overlapped`: on a thread of its own, while `work` runs (the sync is waiting,
    /// the rebuild is work: 2.1 and 2.9 ms of a 3,000-key activation); on this one first
    /// otherwise. A reader may see the change for those few milliseconds before the disk has it;
    /// the change is answered only after.
    ///
    /// A sync that fails throws, after the commit: the change is in the database and the reader
    /// file, and may not survive a power cut. SQLite's own commit would have failed instead; the
    /// caller learns it the same way, an error for the write.
    private func syncLog(_ durable: Bool, overlapped: Bool, during work: () -> Void) throws(StoreError) {
        guard durable, syncsLog, let log = db.logFile() else { return work() }
        let result: Int32
        if overlapped, let sync = DetachedThread.begin({ log.sync() }) {
            work()
            result = sync.take()
        } else {
            result = log.sync()
            work()
        }
        guard result == 0 /* SQLITE_OK */ else {
            throw .sqlite(
                SQLiteError(
                    code: result,
                    message:
                        "cannot sync \(path)-wal to the disk: the last change is committed but may not survive a power cut",
                    sql: nil))
        }
    }

    static func wrap<T>(_ body: () throws(SQLiteError) -> T) throws(StoreError) -> T {
        do { return try body() } catch { throw .sqlite(error) }
    }

    func wrap<T>(_ body: () throws(SQLiteError) -> T) throws(StoreError) -> T {
        try Self.wrap(body)
    }
}
