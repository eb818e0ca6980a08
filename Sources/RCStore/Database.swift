internal import CSQLite
import Glibc
import RCCore
import RCSystem

/// A value bound to a statement parameter.
enum SQLValue {
    case null
    case integer(Int64)
    case text(String)

    /// An integer, or NULL for `nil`.
    static func of(_ integer: Int64?) -> SQLValue { integer.map(SQLValue.integer) ?? .null }

    /// The integer, or `nil` for any other value.
    var integer: Int64? {
        if case let .integer(value) = self { value } else { nil }
    }
}

/// A connection's write-ahead log, synced to the disk (``sync()``) by any thread while the
/// connection that owns it is open and writes nothing: syncing reads nothing SQLite changes then
/// (the unix VFS's `unixSync`: an `fdatasync` of the file's descriptor, and of its directory the
/// first time).
struct LogFile: @unchecked Sendable {
    fileprivate let file: UnsafeMutablePointer<sqlite3_file>

    /// Syncs the log as a commit with `synchronous=FULL` syncs it before it returns: SQLITE_OK, or
    /// SQLite's code for the failure (SQLITE_IOERR_FSYNC).
    func sync() -> Int32 { rc_sqlite_sync_file(file) }
}

/// One SQLite connection. Owns the handle: opened in `init`, closed in `deinit`.
final class Database {
    enum Mode {
        case readOnly
        case readWrite
        /// A file nobody changes while it is open (the reader file, replaced only by `rename(2)`):
        /// opened with `immutable=1`, so SQLite takes no lock and maps no WAL or shared memory.
        case immutable
    }

    private let handle: OpaquePointer
    /// Statements prepared once and kept by their SQL text (``cachedStatement(_:)``).
    private var cache: [String: Statement] = [:]
    /// The most statements the cache keeps. The SQL the code runs is its own constant text, a few
    /// dozen statements; past the bound a statement is prepared for its one use, as before.
    static let cacheLimit = 64

    init(path: String, mode: Mode) throws(SQLiteError) {
        var db: OpaquePointer?
        let flags: Int32 =
            switch mode {
            case .readOnly: SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX
            case .readWrite: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
            case .immutable: SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI
            }
        let name = mode == .immutable ? Self.immutableURI(path) : path
        let rc = sqlite3_open_v2(name, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(db)
            throw SQLiteError(code: rc, message: "\(message): \(path)", sql: nil)
        }
        // SQLite falls back to read-only without a word when it cannot write (a read-only file
        // system, a file the daemon's user cannot write); a writer must know at once.
        if mode == .readWrite && sqlite3_db_readonly(db, "main") == 1 {
            sqlite3_close_v2(db)
            throw SQLiteError(
                code: SQLITE_READONLY,
                message: "\(path) is read-only (a read-only file system or missing write permission)",
                sql: nil)
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        // Another connection (the CLI's mark-stale, a checkpoint) may hold the write lock briefly.
        sqlite3_busy_timeout(db, 5_000)
        if mode == .readWrite {
            // Keep -wal/-shm after close so read-only readers without write access can open the file.
            _ = rc_sqlite_persist_wal(db)
        }
    }

    /// A database in memory, private to this connection, that starts as `image` (a whole database
    /// file's bytes) and grows as it needs to.
    init(image: [UInt8]) throws(SQLiteError) {
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil)
        guard rc == SQLITE_OK, let db else {
            sqlite3_close_v2(db)
            throw SQLiteError(code: rc, message: "cannot open a database in memory", sql: nil)
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, 5_000)
        // SQLite owns the copy (freed on close, grown with its own allocator).
        guard let buffer = sqlite3_malloc64(UInt64(max(image.count, 1))) else {
            throw SQLiteError(code: SQLITE_NOMEM, message: "out of memory", sql: nil)
        }
        image.withUnsafeBytes { buffer.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        let loaded = sqlite3_deserialize(
            db, "main", buffer.assumingMemoryBound(to: UInt8.self), Int64(image.count), Int64(image.count),
            UInt32(SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_RESIZEABLE))
        guard loaded == SQLITE_OK else { throw error(loaded, sql: nil) }
    }

    /// Calls `body` with the bytes a file holding the main database would hold: in place for a
    /// database in memory (``init(image:)``), else a copy.
    func withFileBytes<T>(_ body: (UnsafeRawBufferPointer) -> T) throws(SQLiteError) -> T {
        var size: Int64 = 0
        if let bytes = sqlite3_serialize(handle, "main", &size, UInt32(SQLITE_SERIALIZE_NOCOPY)) {
            return body(UnsafeRawBufferPointer(start: bytes, count: Int(size)))
        }
        guard let copy = sqlite3_serialize(handle, "main", &size, 0) else {
            throw SQLiteError(code: SQLITE_NOMEM, message: "cannot serialize the database", sql: nil)
        }
        defer { sqlite3_free(copy) }
        return body(UnsafeRawBufferPointer(start: copy, count: Int(size)))
    }

    /// Makes a write that would grow the database in memory (``init(image:)``) past `bytes` fail
    /// with `SQLITE_FULL`.
    func limitSize(to bytes: Int) { _ = rc_sqlite_size_limit(handle, Int64(bytes)) }

    /// Gives back the memory of the pages this connection caches and is not using.
    func releaseMemory() { _ = sqlite3_db_release_memory(handle) }

    /// Keeps the WAL of attached database `schema` after the last connection closes (as `init`
    /// does for a writer's own).
    func persistWAL(of schema: String) { _ = rc_sqlite_persist_wal_of(handle, schema) }

    /// The main database's log (the write-ahead log in WAL mode), for ``LogFile/sync()``; `nil`
    /// while a transaction is open or before one opened the log.
    func logFile() -> LogFile? {
        guard let file = rc_sqlite_log_file(handle), sqlite3_get_autocommit(handle) != 0 else { return nil }
        return LogFile(file: file)
    }

    /// The most memory SQLite uses in a writing process before its page caches recycle their pages
    /// (spilling dirty ones to the WAL or the file) instead of taking more. Each connection's default
    /// cache is 2 MB, and a document near the size limit (4 MiB) filled the writer's, the reader
    /// file's and the attached state database's at once (heaptrack: SQLite held 6.7 MB at its peak).
    /// A soft limit: SQLite never fails an allocation for it, and what one statement needs whole (a
    /// 4 MB record) it still gets. 4 MiB leaves a 3,000-key document every page it uses (with 1 MiB,
    /// storing one took 30% more writes and 86% more reads, strace); ``bigDocumentCacheMemoryLimit``
    /// applies while a bigger document is stored.
    static let cacheMemoryLimit: Int64 = 4 << 20

    /// The limit while a document of more than ``bigDocumentBytes`` is stored, activated and copied
    /// to the reader file: its pages are written once, and caching them only adds to the peak (1 MiB:
    /// 0.7 MiB less than 2 MiB for 44,000 keys, and the same as 512 KiB; BENCHMARKS.md, issue 30).
    static let bigDocumentCacheMemoryLimit: Int64 = 1 << 20

    /// Keys and values of more bytes than this are a big document (``bigDocumentCacheMemoryLimit``).
    static let bigDocumentBytes = 1 << 20

    /// Applies `limit` to every connection of the process.
    static func limitCacheMemory(_ limit: Int64 = cacheMemoryLimit) {
        _ = sqlite3_soft_heap_limit64(limit)
    }

    /// The limit in force in this process (negative: none set).
    static var appliedCacheMemoryLimit: Int64 { sqlite3_soft_heap_limit64(-1) }

    deinit {
        // Each statement is finalized as it goes; the connection closes once none is left.
        cache = [:]
        sqlite3_close_v2(handle)
    }

    /// `file:PATH?immutable=1`, with the characters a URI gives a meaning to (`%`, `?`, `#`)
    /// percent-encoded, so any path names the file it names.
    static func immutableURI(_ path: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        // An absolute path gets an empty authority (`file:///var/...`), so `//x` is a path, not a host.
        var uri = Array((path.hasPrefix("/") ? "file://" : "file:").utf8)
        for byte in path.utf8 {
            if byte == UInt8(ascii: "%") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") {
                uri += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            } else {
                uri.append(byte)
            }
        }
        return String(decoding: uri + Array("?immutable=1".utf8), as: UTF8.self)
    }

    /// Refuses a file that exists but cannot be a database, before SQLite sees it: SQLite takes an
    /// empty file for a new database (a truncated state.db would silently lose everything and be
    /// rebuilt in place), and reads a file shorter than its 100-byte header as zeros ("schema
    /// version 0", no tables). Anything but a regular file is refused too: opening a FIFO read-only
    /// blocks until a writer comes. Damage past the header is SQLite's to find (SQLITE_CORRUPT).
    static func checkFile(_ path: String) throws(SQLiteError) {
        let opened: FileDescriptor?
        do {
            opened = try FileBytes.openRegularFile(path, flags: O_RDONLY)
        } catch {
            throw SQLiteError(code: SQLITE_CANTOPEN, message: error.description, sql: nil)
        }
        guard let fd = opened else { return }
        var header = [UInt8](repeating: 0, count: 100)
        var count = 0
        while count < header.count {
            let n = Posix.retrying {
                header.withUnsafeMutableBytes { read(fd.rawValue, $0.baseAddress! + count, $0.count - count) }
            }
            if n < 0 {
                throw SQLiteError(code: SQLITE_IOERR, message: SystemError("read \(path)").description, sql: nil)
            }
            if n == 0 { break }
            count += n
        }
        let problem: String? =
            if count == 0 {
                "is empty (0 bytes)"
            } else if count < header.count {
                "is truncated (\(count) bytes, shorter than the 100-byte SQLite header)"
            } else if !header.starts(with: Array("SQLite format 3\u{0}".utf8)) {
                "does not start with the SQLite header"
            } else {
                nil
            }
        if let problem {
            throw SQLiteError(code: SQLITE_NOTADB, message: "\(path) \(problem), not a database", sql: nil)
        }
    }

    private func error(_ code: Int32, sql: String?) -> SQLiteError {
        SQLiteError(code: code, message: String(cString: sqlite3_errmsg(handle)), sql: sql)
    }

    /// Runs one or more statements that return no rows.
    func execute(_ sql: String) throws(SQLiteError) {
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw error(rc, sql: sql) }
    }

    func prepare(_ sql: String) throws(SQLiteError) -> Statement {
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw error(rc, sql: sql) }
        return Statement(statement, sql: sql)
    }

    /// The statement for `sql`, prepared on its first use and kept for the next ones (the daemon
    /// runs the same few queries on every ping and fetch), reset and without bindings. A statement
    /// still in use (a query run from inside another's row) is not shared: that use gets one of its own.
    func cachedStatement(_ sql: String) throws(SQLiteError) -> Statement {
        if let statement = cache[sql], !statement.isBusy {
            statement.reset()
            return statement
        }
        let statement = try prepare(sql)
        if cache[sql] == nil && cache.count < Self.cacheLimit { cache[sql] = statement }
        return statement
    }

    /// How many statements the cache keeps.
    var cachedStatements: Int { cache.count }

    /// Runs `sql` with `values` and returns every row, each column read by `row`.
    func query<T>(_ sql: String, _ values: [SQLValue] = [], row: (Row) -> T) throws(SQLiteError) -> [T] {
        let statement = try cachedStatement(sql)
        // Reset at once, even after an error: a read left open would hold its snapshot (and the
        // WAL a checkpoint wants to recycle) until the next use.
        defer { statement.reset() }
        try statement.bind(values)
        var rows: [T] = []
        while let current = try statement.step() { rows.append(row(current)) }
        return rows
    }

    /// Runs a statement that returns no rows.
    func run(_ sql: String, _ values: [SQLValue] = []) throws(SQLiteError) {
        let statement = try cachedStatement(sql)
        defer { statement.reset() }
        try statement.bind(values)
        while try statement.step() != nil {}
    }

    /// Writes the blob in column `column` of row `row` of `table` (made to its size already, as
    /// `zeroblob(N)`) through SQLite's incremental blob I/O: `fill` is handed a function that writes
    /// bytes at an offset. A blob written so is never whole in memory.
    func writeBlob(
        table: String, column: String, row: Int64,
        _ fill: ((UnsafeRawBufferPointer, Int) throws(SQLiteError) -> Void) throws(SQLiteError) -> Void
    ) throws(SQLiteError) {
        var blob: OpaquePointer?
        let opened = sqlite3_blob_open(handle, "main", table, column, row, 1, &blob)
        defer { sqlite3_blob_close(blob) }
        guard opened == SQLITE_OK, let blob else { throw error(opened, sql: nil) }
        try fill { (bytes, offset) throws(SQLiteError) in
            guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
            let rc = sqlite3_blob_write(blob, base, Int32(bytes.count), Int32(offset))
            guard rc == SQLITE_OK else { throw error(rc, sql: nil) }
        }
    }

    /// Runs `body` in one `BEGIN IMMEDIATE` transaction: committed when it returns, rolled back
    /// when it throws, and the first error is the one rethrown.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// Runs `body`'s reads in one read transaction: one snapshot for all of them (no commit of
    /// another connection lands between two), and the WAL's read lock taken once instead of once a
    /// statement. Inside a transaction already open, in that one.
    func reading<T>(_ body: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        guard sqlite3_get_autocommit(handle) != 0 else { return try body() }
        try execute("BEGIN")
        // A read transaction commits nothing: its end cannot fail but by misuse.
        defer { _ = sqlite3_exec(handle, "COMMIT", nil, nil, nil) }
        return try body()
    }

    var changes: Int { Int(sqlite3_changes(handle)) }

    /// The rowid of the last row this connection inserted (of a statement's rows, its last one).
    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Rows inserted, updated or deleted on this connection since it opened.
    var totalChanges: Int64 { sqlite3_total_changes64(handle) }

}

/// A prepared statement, finalized in `deinit`. It does not keep its ``Database``: the cache
/// there keeps it (SQLite's `close_v2` waits for the last statement of a connection).
final class Statement {
    fileprivate let handle: OpaquePointer
    private let sql: String
    /// Counts steps and resets: a ``Row`` read after the step or reset that ended it reads nothing.
    fileprivate private(set) var generation = 0

    fileprivate init(_ handle: OpaquePointer, sql: String) {
        self.handle = handle
        self.sql = sql
    }

    deinit {
        sqlite3_finalize(handle)
    }

    /// Stepped and not yet reset or done: it holds a read (or write) open.
    var isBusy: Bool { sqlite3_stmt_busy(handle) != 0 }

    /// Ends the current run (and any read it holds open) and forgets the bindings; the rows it
    /// gave read nothing from now on.
    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        generation &+= 1
    }

    private func failure(_ code: Int32) -> SQLiteError {
        SQLiteError(code: code, message: String(cString: sqlite3_errmsg(sqlite3_db_handle(handle))), sql: sql)
    }

    func bind(_ values: [SQLValue]) throws(SQLiteError) {
        reset()
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let rc: Int32 =
                switch value {
                case .null: sqlite3_bind_null(handle, index)
                case let .integer(i): sqlite3_bind_int64(handle, index, i)
                case let .text(s): bindText(s, index)
                }
            guard rc == SQLITE_OK else { throw failure(rc) }
        }
    }

    /// Binds `values` and runs the statement to its end without copying the texts: each is bound in
    /// place (`SQLITE_STATIC`) while the run lasts, and the bindings are cleared before the texts
    /// may go. For writes of a document's values, where a copy of each doubled the peak memory of a
    /// big one.
    func runBorrowing(_ values: [SQLValue]) throws(SQLiteError) {
        reset()
        var failed: SQLiteError?
        func bind(from offset: Int) {
            guard offset < values.count else {
                do { while try step() != nil {} } catch { failed = error }
                reset()
                return
            }
            let index = Int32(offset + 1)
            var rc: Int32 = SQLITE_OK
            switch values[offset] {
            case .null: rc = sqlite3_bind_null(handle, index)
            case let .integer(i): rc = sqlite3_bind_int64(handle, index, i)
            case let .text(s):
                var text = s
                text.withUTF8 { buffer in
                    if let base = buffer.baseAddress, !buffer.isEmpty {
                        rc = sqlite3_bind_text(handle, index, base, Int32(buffer.count), nil)  // SQLITE_STATIC
                    } else {
                        rc = sqlite3_bind_text(handle, index, "", 0, rc_sqlite_transient())
                    }
                    if rc == SQLITE_OK { bind(from: offset + 1) }
                }
            }
            if rc != SQLITE_OK {
                failed = failure(rc)
                reset()
            } else if case .text = values[offset] {
                return
            } else {
                bind(from: offset + 1)
            }
        }
        bind(from: 0)
        if let failed { throw failed }
    }

    /// Binds `bytes` as text to parameter `index` without copying them (`SQLITE_STATIC`): they must
    /// stay where they are until the statement is reset.
    func bindBorrowedText(_ bytes: UnsafeRawBufferPointer, at index: Int32) throws(SQLiteError) {
        let rc =
            if let base = bytes.baseAddress, !bytes.isEmpty {
                sqlite3_bind_text(handle, index, base.assumingMemoryBound(to: CChar.self), Int32(bytes.count), nil)
            } else {
                sqlite3_bind_text(handle, index, "", 0, rc_sqlite_transient())
            }
        guard rc == SQLITE_OK else { throw failure(rc) }
    }

    /// Binds `bytes` as a blob to parameter `index` without copying them (`SQLITE_STATIC`): they
    /// must stay where they are until the statement is reset.
    func bindBorrowedBlob(_ bytes: UnsafeRawBufferPointer, at index: Int32) throws(SQLiteError) {
        let rc =
            if let base = bytes.baseAddress, !bytes.isEmpty {
                sqlite3_bind_blob(handle, index, base, Int32(bytes.count), nil)
            } else {
                sqlite3_bind_zeroblob(handle, index, 0)
            }
        guard rc == SQLITE_OK else { throw failure(rc) }
    }

    /// Runs the statement, bound already, to its end; then resets it.
    func runToEnd() throws(SQLiteError) {
        defer { reset() }
        while try step() != nil {}
    }

    /// Binds text with its length, not as a C string, so text holding a NUL is kept whole, never cut there.
    private func bindText(_ text: String, _ index: Int32) -> Int32 {
        var text = text
        return text.withUTF8 { buffer in
            // A NULL pointer would bind SQL NULL: the empty string is bound from a literal.
            guard let base = buffer.baseAddress, !buffer.isEmpty else {
                return sqlite3_bind_text(handle, index, "", 0, rc_sqlite_transient())
            }
            return sqlite3_bind_text(handle, index, base, Int32(buffer.count), rc_sqlite_transient())
        }
    }

    /// Advances to the next row; `nil` when the statement is done. A row is only valid until
    /// the next step: `Row` accessors copy the column data out.
    func step() throws(SQLiteError) -> Row? {
        generation &+= 1
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return Row(statement: self)
        case SQLITE_DONE: return nil
        case let rc: throw failure(rc)
        }
    }
}

/// The current row of a statement. Every accessor copies, so values outlive the row. The row
/// itself does not outlive its statement's next step or reset: read after them, every column is
/// NULL, never another row's (a cached statement is reset after each query and reused by the next).
struct Row {
    private let statement: Statement
    private let generation: Int

    fileprivate init(statement: Statement) {
        self.statement = statement
        generation = statement.generation
    }

    /// The statement's handle while this row is its current one.
    private var handle: OpaquePointer? { statement.generation == generation ? statement.handle : nil }

    func isNull(_ column: Int32) -> Bool {
        guard let handle else { return true }
        return sqlite3_column_type(handle, column) == SQLITE_NULL
    }

    func text(_ column: Int32) -> String? {
        guard let handle, let bytes = sqlite3_column_text(handle, column) else { return nil }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    func integer(_ column: Int32) -> Int64? {
        guard let handle, !isNull(column) else { return nil }
        return sqlite3_column_int64(handle, column)
    }

    /// Column `column`'s text as SQLite holds it, read in place (no copy); empty when it is NULL.
    private func bytes(_ column: Int32) -> UnsafeRawBufferPointer {
        guard let handle, let text = sqlite3_column_text(handle, column) else {
            return UnsafeRawBufferPointer(start: nil, count: 0)
        }
        return UnsafeRawBufferPointer(start: text, count: Int(sqlite3_column_bytes(handle, column)))
    }

    /// Column `column`'s blob as SQLite holds it, read in place (no copy): valid until the
    /// statement's next step or reset. Empty when it is NULL or empty.
    func blob(_ column: Int32) -> UnsafeRawBufferPointer {
        guard let handle, let bytes = sqlite3_column_blob(handle, column) else {
            return UnsafeRawBufferPointer(start: nil, count: 0)
        }
        return UnsafeRawBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(handle, column)))
    }

    /// Whether column `column` holds exactly the bytes of `text` (compared in place, not copied).
    func hasText(_ column: Int32, _ text: String) -> Bool {
        let held = bytes(column)
        var text = text
        return text.withUTF8 { other in
            held.count == other.count
                && (other.isEmpty || memcmp(held.baseAddress!, other.baseAddress!, other.count) == 0)
        }
    }

    /// How column `column`'s text orders against `other`'s column `otherColumn`, as SQLite's BINARY
    /// collation orders them (the bytes, then the length): negative, zero or positive. Neither is copied.
    func compareText(_ column: Int32, with other: Row, _ otherColumn: Int32) -> Int {
        Self.order(bytes(column), other.bytes(otherColumn))
    }

    /// How column `column`'s text orders against `text`, as ``compareText(_:with:_:)`` orders two
    /// columns. Neither is copied.
    func compareText(_ column: Int32, with text: String) -> Int {
        var text = text
        return text.withUTF8 { Self.order(bytes(column), UnsafeRawBufferPointer($0)) }
    }

    /// How `a` orders against `b` as SQLite's BINARY collation orders texts: the bytes, then the length.
    private static func order(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        let common = min(a.count, b.count)
        if common > 0, let x = a.baseAddress, let y = b.baseAddress {
            let order = memcmp(x, y, common)
            if order != 0 { return Int(order) }
        }
        return a.count - b.count
    }
}
