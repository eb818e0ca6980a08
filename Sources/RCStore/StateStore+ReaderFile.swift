internal import CLinux
import Glibc
import RCCore
import RCSystem

/// The reader file: what `rcagent get/list/status/check-update/activity` read, in a database of its
/// own that every user may read and nobody locks.
///
/// The state database is private to the daemon (mode 0640): in WAL mode, a reader that keeps a read
/// transaction open stops every checkpoint and the WAL grows for as long as it likes, so only trusted
/// users may open it. After each committed change readers can see, the writer builds a new reader
/// file at an unpredictable temporary name in the same directory (the state database's tables that
/// readers read and its `user_version`, so the same queries read it) and swaps it into place
/// (``install(_:at:)``). Changing the name leaves every reader that opened the old file on the old
/// inode: no file a reader holds ever changes, so readers open it `immutable=1` (no locks, no WAL,
/// no shared memory) and none of them can hold back the writer. After a crash of the process, the
/// file in place is the old one or the new one, whole.
///
/// It holds the defaults, the active values, the snapshots' metadata, the fetch state, the stale
/// flag, the device id, the Live Activities and the last `database-recovered` event; not the fetched
/// values (no reader prints them), the notes or the rest of the event log.
extension StateStore {
    /// The reader file beside the state database `databasePath`.
    public static func readerPath(forDatabase databasePath: String) -> String {
        guard let slash = databasePath.lastIndex(of: "/") else { return "reader.db" }
        // As a String: `Substring + String` is the generic append, which looks up its witnesses at run time.
        return String(databasePath[...slash]) + "reader.db"
    }

    /// Whether the reader file at `readerPath` holds the state database's last change: it is written
    /// (or touched) after every commit, so it is no older than the database and its WAL. One that is
    /// older was left behind by a writer that could not rewrite it, a shutdown's checkpoint, or a
    /// hand edit of the database: who may read the database then reads that instead.
    public static func readerFileIsCurrent(_ readerPath: String, database databasePath: String) -> Bool {
        func modified(_ path: String) -> timespec? {
            var info = stat()
            return stat(path, &info) == 0 ? info.st_mtim : nil
        }
        guard let reader = modified(readerPath) else { return false }
        for path in [databasePath, databasePath + "-wal"] {
            guard let other = modified(path) else { continue }
            if (other.tv_sec, other.tv_nsec) > (reader.tv_sec, reader.tv_nsec) { return false }
        }
        return true
    }

    /// After a commit that changed nothing readers see: the reader file is still current, and says
    /// so by its time (see ``readerFileIsCurrent(_:database:)``).
    func touchReaderFile() {
        guard !readerStale, let path = readerPath else { return }
        asFileOwner { _ = utimensat(AT_FDCWD, path, nil, 0) }
    }

    /// Runs `body` with the calling thread's file-system ids set to ``fileOwner`` when root writes
    /// for another user. The state directory is that user's: between `mkstemp` and SQLite's open of
    /// the temporary name (by name, following links), or at `reader.db` itself, that user could put a
    /// symbolic link, and root would create or write the file it names (`/etc/nologin`, say). As
    /// that user, the link leads only where that user could write anyway. Per thread (setfsuid(2)),
    /// and `body` never suspends, so no other work runs with these ids.
    func asFileOwner<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        try Self.asUser(fileOwner, body)
    }

    /// Runs `body` with the calling thread's file-system ids set to `owner`'s when root works in
    /// that user's directory (see ``asFileOwner(_:)``), as itself otherwise.
    static func asUser<T, E: Error>(_ owner: (uid_t, gid_t)?, _ body: () throws(E) -> T) throws(E) -> T {
        guard let (uid, gid) = owner, geteuid() == 0 else { return try body() }
        let gidBefore = rcagent_setfsgid(UInt32(gid))
        let uidBefore = rcagent_setfsuid(UInt32(uid))
        defer {
            _ = rcagent_setfsuid(UInt32(bitPattern: uidBefore))
            _ = rcagent_setfsgid(UInt32(bitPattern: gidBefore))
        }
        return try body()
    }

    /// The prefix of the temporary names a reader file is built under (`reader.db.tmp-XXXXXX`).
    static func temporaryPrefix(_ readerPath: String) -> String { readerPath + ".tmp-" }

    /// Opens the reader file for reading, or returns `nil` when there is none yet.
    public static func openReaderFile(path: String) throws(StoreError) -> StateStore? {
        try openForReading(path: path, mode: .immutable)
    }

    /// Keeps the reader file at `path` up to date from now on: writes it at once, then after every
    /// committed transaction that changes what readers see. A failure to write it never fails the
    /// transaction (the state database has it): `onFailure` hears of it, once until a write succeeds
    /// again, and the next transaction tries again.
    public func maintainReaderFile(at path: String, onFailure: @escaping (StoreError) -> Void) {
        readerPath = path
        readerFailure = onFailure
        removeTemporaryReaderFiles()
        readerStale = true
        refreshReaderFile()
    }

    /// Writes the reader file when a committed change left it behind.
    func refreshReaderFile() {
        guard readerStale, let path = readerPath else { return }
        do {
            try asFileOwner { () throws(StoreError) in try writeReaderFile(to: path) }
            readerStale = false
            readerFailing = false
        } catch {
            if !readerFailing { readerFailure?(error) }
            readerFailing = true
        }
    }

    /// Builds a reader file from the committed state and puts it in place at `path`: the readers' rows
    /// copied into the staging database (``stagingDatabase()``), its bytes written to a
    /// temporary file. A reader file over ``stagingLimit`` is built in the temporary file itself.
    public func writeReaderFile(to path: String) throws(StoreError) {
        var temporary = ""
        let fd = try Self.createTemporary(Self.temporaryPrefix(path), mode: 0o644, name: &temporary)
        var renamed = false
        defer { if !renamed { unlink(temporary) } }
        var staged = false
        if !readerTooBig { staged = try writeStaged(to: fd) }
        if !staged {
            try buildInPlace(temporary, fd: fd)
            var info = stat()
            readerTooBig = fstat(fd.rawValue, &info) == 0 && info.st_size > Self.stagingLimit
        }
        try Self.install(temporary, at: path)
        renamed = true
    }

    /// Puts the file at `temporary` in place at `path`, leaving nothing at `temporary`: the two
    /// names swapped (`RENAME_EXCHANGE`) and the old file's new name removed, or a plain rename when
    /// there is no file at `path` yet or the file system cannot swap names.
    ///
    /// Not a rename over the old file: ext4 then writes the new file's blocks out at once (its
    /// `auto_da_alloc`), and the old file's blocks, written out the same way at its own rename, are
    /// freed at the next: 0.21 ms a replacement against 0.03, and a write to the disk at every
    /// change readers see (BENCHMARKS.md). Swapped in, a file replaced within the kernel's writeback
    /// delay (30 s by default) is never written to the disk at all.
    ///
    /// Nor synced: the file is derived, and its fsync cost more than the commit itself (1 to 20 ms
    /// for 3,000 keys). A crash of the process leaves the old file or the new one, whole (the kernel
    /// has every byte written); a power cut can leave one empty or cut short, which readers detect and
    /// read around (the state database, or the defaults file for who may not read it), and which the
    /// daemon rebuilds at start.
    static func install(_ temporary: String, at path: String) throws(StoreError) {
        if rcagent_exchange(temporary, path) == 0 {
            unlink(temporary)
            return
        }
        guard rename(temporary, path) == 0 else {
            throw ioError(SystemError("rename \(temporary) to \(path)"))
        }
    }

    /// Fills the staging database and writes its bytes to `fd`; `false`, with nothing written, when
    /// the reader file would be over ``stagingLimit``.
    private func writeStaged(to fd: borrowing FileDescriptor) throws(StoreError) -> Bool {
        var staging: Database
        do {
            staging = try fillReaderStaging()
        } catch .sqlite(let error) where error.code & 0xFF == 13 /* SQLITE_FULL: past the limit */ {
            return false
        }
        // Deleted rows leave free pages, and the bytes written are every page: after a big state
        // (3,000 keys) is followed by a small one, start again from the empty image rather than write
        // the big file's worth of empty pages at each commit from then on.
        let (pages, free) = try wrap { () throws(SQLiteError) in
            (
                try staging.query("PRAGMA page_count") { $0.integer(0) ?? 0 }.first ?? 0,
                try staging.query("PRAGMA freelist_count") { $0.integer(0) ?? 0 }.first ?? 0
            )
        }
        if free > 32 && free * 2 > pages {
            readerStaging = nil
            staging = try fillReaderStaging()
        }
        let written = try wrap { () throws(SQLiteError) in
            try staging.withFileBytes { Posix.writeAll(fd.rawValue, $0) }
        }
        // The pages cached from the state database serve no later write (another connection writes
        // it in between): given back.
        staging.releaseMemory()
        guard written else { throw Self.ioError(SystemError("write the reader file")) }
        return true
    }

    /// Builds the reader file in the temporary file `temporary` (open as `fd`): the empty image
    /// written to it, then a connection of its own on it copies the rows, as
    /// ``writeStaged(to:)`` does into memory. For a reader file too big to keep in memory
    /// (a 4 MiB document's): SQLite's cache of it stays bounded, it spills to the file.
    private func buildInPlace(_ temporary: String, fd: borrowing FileDescriptor) throws(StoreError) {
        let image = try emptyReaderImage()
        guard Posix.writeAll(fd.rawValue, image) else { throw Self.ioError(SystemError("write \(temporary)")) }
        try wrap { () throws(SQLiteError) in
            let copy = try Database(path: temporary, mode: .readWrite)
            try copy.execute("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF")
            try copy.run("ATTACH DATABASE ? AS live", [.text(self.path)])  // not allowed inside a transaction
            try copy.run("BEGIN")
            for statement in Self.stateCopy + Self.defaultsCopy { try copy.run(statement) }
            try copyActiveValues(into: copy, active: try Self.activeSet(of: copy))
            try copy.run("COMMIT")
            try copy.execute("DETACH DATABASE live")
        }
    }

    /// The staging database (``stagingDatabase()``) holding the readers' rows as committed now.
    /// Every table is emptied and filled again in one transaction, except the value tables when
    /// ``readerMirror`` says they hold what is committed: the active values are kept when the
    /// active set is the one they hold, changed by ``lastSetDelta`` when that leads from it to the
    /// active one, copied whole otherwise; the defaults are kept unless they were replaced. Any
    /// commit of another connection since the last copy copies both again.
    /// A 3,000-key state copied its values again at every write (a 304, a stale flag, a failed
    /// fetch) and at every activation, however few keys it changed (BENCHMARKS.md, issue 30).
    private func fillReaderStaging() throws(StoreError) -> Database {
        let staging = try stagingDatabase()
        do {
            // Another connection's commit may have changed anything: the mirror holds only while
            // none came since it was made, counted by the writer's connection (`PRAGMA data_version`)
            // now, not at this store's last write: one may land between that write and this copy
            // (and `writeReaderFile` may come with no write at all). Counted before the copy's
            // snapshot for the next copy (every commit it counts, the snapshot holds), and after it
            // for this one (every commit the snapshot holds, it counts).
            let others = try dataVersion()
            // One read transaction on the state database for every statement; each prepared once
            // per store (the staging connection's cache).
            try staging.run("BEGIN")
            for statement in Self.stateCopy { try staging.run(statement) }
            let unchanged = try dataVersion()
            let mirror = readerMirror.flatMap { $0.others == unchanged ? $0 : nil }
            let active = try Self.activeSet(of: staging)
            if mirror == nil {
                for statement in Self.defaultsCopy { try staging.run(statement) }
            }
            if let mirror, mirror.activeSet == active {
                // The same set: its rows never change.
            } else if let mirror, let delta = lastSetDelta, delta.pays(from: mirror.activeSet, to: active) {
                try apply(delta, to: staging, active: active)
            } else {
                activeValueCopies += 1
                try copyActiveValues(into: staging, active: active)
            }
            try staging.run("COMMIT")
            readerMirror = ReaderMirror(activeSet: active, others: others)
        } catch {
            // Whatever it holds now is unknown (no journal): the next write starts from the image.
            readerStaging = nil
            throw .sqlite(error)
        }
        return staging
    }

    /// The largest staging database, in bytes (a 3,000-key state's is about 270 KiB).
    static let stagingLimit = 1 << 20

    /// The statements that copy the readers' rows from the state database, except the value
    /// tables': emptied, then filled.
    static let stateCopy = [
        "DELETE FROM meta", "DELETE FROM snapshots", "DELETE FROM fetch_state", "DELETE FROM stale",
        "DELETE FROM activities", "DELETE FROM history", "DELETE FROM rejected_versions", "DELETE FROM trial",
        "DELETE FROM events",
        "INSERT INTO meta SELECT * FROM live.meta WHERE key IN ('device_id', 'activation.deferred')",
        "INSERT INTO snapshots SELECT * FROM live.snapshots",
        "INSERT INTO fetch_state SELECT * FROM live.fetch_state",
        "INSERT INTO stale SELECT * FROM live.stale",
        "INSERT INTO activities SELECT * FROM live.activities",
        "INSERT INTO history SELECT * FROM live.history",
        "INSERT INTO rejected_versions SELECT * FROM live.rejected_versions",
        "INSERT INTO trial SELECT * FROM live.trial",
        """
        INSERT INTO events SELECT * FROM live.events WHERE id =
            (SELECT max(id) FROM live.events WHERE kind = 'database-recovered')
        """,
    ]

    static let defaultsCopy = ["DELETE FROM defaults", "INSERT INTO defaults SELECT * FROM live.defaults"]

    /// The active value set's id in the state database attached to `copy` as `live` (`nil`: no
    /// remote values are active).
    static func activeSet(of copy: Database) throws(SQLiteError) -> Int64? {
        try copy.query("SELECT set_id FROM live.snapshots WHERE kind = 'active'") { $0.integer(0) }.first ?? nil
    }

    /// Copies the active values (value set `active`) whole into `copy`'s `active_values` (the state
    /// database attached as `live`): from the values of the set this write stored and committed
    /// (``storedSet``) when that set is `active`, otherwise from its record in the state database,
    /// read in place.
    ///
    /// From memory whenever the write stored the set: its record is then not read back whole beside
    /// the document's own values. Read back, a 4 MiB document's record was the daemon's peak (3.79x
    /// the document for 44,000 keys, `bench/bigdoc.py`); for one 4 MB value, read back as rows, the
    /// value three times over (3.0x; 2.0x from memory).
    func copyActiveValues(into copy: Database, active: Int64?) throws(SQLiteError) {
        try copy.run("DELETE FROM active_values")
        if let stored = storedSet, let id = stored.id, id == active {
            try Self.activeValuesInsert.run(stored.values, on: copy)
            activeValueCopiesFromMemory += 1
            return
        }
        var record = try StoredRecord.read(active, from: "live.value_sets", on: copy)
        defer { record.close() }
        try Self.activeValuesInsert.run(&record.reader, on: copy)
    }

    /// Changes `staging`'s `active_values` by `delta`, to value set `active`'s: each key the delta
    /// names deleted, then inserted from the set's record (one walk of it: the delta's keys are in
    /// key order) when the set has it.
    private func apply(_ delta: SetDelta, to staging: Database, active: Int64?) throws(SQLiteError) {
        var record = try StoredRecord.read(active, from: "live.value_sets", on: staging)
        defer { record.close() }
        var entry = try record.reader.next()
        for key in delta.keys {
            try staging.run("DELETE FROM active_values WHERE key = ?", [.text(key)])
            let found = try ValueRecord.withBytes(of: key) { (target) throws(SQLiteError) -> ValueRecord.Entry? in
                while let current = entry, ValueRecord.Reader.order(current.key, target) < 0 {
                    entry = try record.reader.next()
                }
                guard let current = entry, ValueRecord.Reader.order(current.key, target) == 0 else { return nil }
                return current
            }
            guard let found else { continue }
            let insert = try staging.cachedStatement(Self.activeValuesInsert.single)
            try insert.bindBorrowedText(found.key, at: 1)
            try insert.bindBorrowedText(found.value, at: 2)
            try insert.runToEnd()
        }
    }

    static let activeValuesInsert = RowsInsert("INSERT INTO active_values (key, value) VALUES ", row: "(?, ?)")

    /// The reader file as it will be written, kept in memory by a connection of its own that has the
    /// state database attached as `live`: opened once per store from the empty image, so neither
    /// schema is parsed again at each write (a new connection per write, parsing both, was 58% of the
    /// daemon's CPU for a small fetch, BENCHMARKS.md). Its own connection: the copy reads the state
    /// database in one read transaction of its own, and the writer's connection never has another
    /// database attached. Rows it deletes are zeroed (`secure_delete`): the file's bytes hold
    /// nothing but the current rows.
    func stagingDatabase() throws(StoreError) -> Database {
        if let readerStaging { return readerStaging }
        let image = try emptyReaderImage()
        let staging = try wrap { () throws(SQLiteError) in
            let staging = try Database(image: image)
            // Its size bounded: past the limit a write fails (SQLITE_FULL) and the file is built in
            // place; a small cache spills early, so no more than about the limit is held at once.
            staging.limitSize(to: Self.stagingLimit)
            try staging.execute("PRAGMA journal_mode=OFF; PRAGMA secure_delete=ON; PRAGMA cache_size=-256")
            try staging.run("ATTACH DATABASE ? AS live", [.text(self.path)])
            staging.persistWAL(of: "live")  // as the writer's: closing this one last keeps the WAL
            return staging
        }
        readerStaging = staging
        return staging
    }

    /// The reader file's schema and `user_version`, empty, as bytes: once per store, for the state
    /// database's schema as it stands (not the migrations that built it), the tables readers read.
    /// Creating the schema at every rebuild, a statement per table and index, was half the daemon's
    /// CPU for a small activation (BENCHMARKS.md, issue 30); creating it once, at each start, was
    /// still a tenth of a new daemon's instructions (the fleet start-up): for the schema this build
    /// makes, the image is the one built in advance (``DatabaseImage/reader(_:)``).
    func emptyReaderImage() throws(StoreError) -> [UInt8] {
        if let readerImage { return readerImage }
        let schema = try Self.wrap { () throws(SQLiteError) in try readerSchema() }
        let image = try Self.wrap { () throws(SQLiteError) in try DatabaseImage.reader(schema) }
        readerImage = image
        return image
    }

    /// The statements that create the reader file's tables for this state database:
    /// only what readers read. Every reader parses the whole schema before its first statement
    /// (`rcagent get` spent 15% of its instructions there): no value sets, no removed-activity ids,
    /// no indexes beyond the keys'; the active values (a record in the state database) a table of
    /// their own, and the fetched values (never copied here) an empty table of that name.
    func readerSchema() throws(SQLiteError) -> [String] {
        try db.query(
            """
            SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite%' AND type = 'table'
                AND name NOT IN ('value_sets', 'removed_activities')
            ORDER BY rowid
            """
        ) { $0.text(0) ?? "" } + [
            "CREATE TABLE fetched_values (key TEXT PRIMARY KEY, value TEXT)",
            "CREATE TABLE active_values (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        ]
    }

    /// A new empty file at `prefix` + six random characters with `mode` (0644 for the reader file,
    /// which is for everyone), open until the returned descriptor goes.
    static func createTemporary(_ prefix: String, mode: mode_t, name: inout String) throws(StoreError) -> FileDescriptor
    {
        var template = Array((prefix + "XXXXXX").utf8CString)
        let created = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard let fd = FileDescriptor(returnedBy: created) else {
            throw ioError(SystemError("create \(prefix)XXXXXX"))
        }
        name = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        guard fchmod(fd.rawValue, mode) == 0 else {
            let error = SystemError("chmod \(name)")
            unlink(name)
            throw ioError(error)
        }
        return fd
    }

    /// Removes what a writer killed while building a reader file left behind.
    private func removeTemporaryReaderFiles() {
        guard let path = readerPath, let slash = path.lastIndex(of: "/") else { return }
        let directory = String(path[..<slash])
        let prefix = String(Self.temporaryPrefix(path)[path.index(after: slash)...])
        for name in FileBytes.directoryEntries(directory.isEmpty ? "/" : directory) where name.hasPrefix(prefix) {
            unlink(directory + "/" + name)
        }
    }

    static func ioError(_ error: SystemError) -> StoreError {
        .sqlite(SQLiteError(code: 10 /* SQLITE_IOERR */, message: error.description, sql: nil))
    }
}

/// What the staging database's value tables hold: value set `activeSet`'s rows (`nil`: no remote
/// values) as `active_values`, and the defaults as committed, with every commit of another
/// connection the writer's connection had counted when it was `others` (`PRAGMA data_version`).
/// A value set's rows never change once committed, and a committed id is never used again
/// (`AUTOINCREMENT`), so the id names them. (An id taken by a transaction that rolled back is
/// free again: only a committed one names rows.)
struct ReaderMirror {
    var activeSet: Int64?
    var others: Int64
}

/// The remote values that differ between value sets `from` and `to` (`nil`: no remote values):
/// the keys added, removed or given another value, while there are at most ``keyLimit`` of them,
/// and how many rows `to` has. Applied to `from`'s rows (delete each key, insert it from `to`),
/// it gives `to`'s.
struct SetDelta {
    static let keyLimit = 1_024
    let from: Int64?
    let to: Int64?
    private(set) var keys: [String] = []
    private(set) var complete = true
    var rows = 0

    init(from: Int64?, to: Int64?) {
        self.from = from
        self.to = to
        // Its room taken at once, before the merge's own list of changed keys grows: grown while
        // that one grew, a 44,000-key document's peak was 0.3 MiB higher (3.06x the document against
        // 2.98x, `bench/bigdoc.py`): the two arrays' reallocations interleaved on the heap.
        keys.reserveCapacity(Self.keyLimit)
    }

    mutating func add(_ key: String) {
        if keys.count < Self.keyLimit { keys.append(key) } else { complete = false }
    }

    /// Whether it leads from set `from` to set `to` and costs less than copying `to` whole: a
    /// key costs two statements, each a seek, where a copied row costs about one insert.
    func pays(from: Int64?, to: Int64?) -> Bool {
        complete && self.from == from && self.to == to && keys.count * 4 <= max(rows, 64)
    }
}
