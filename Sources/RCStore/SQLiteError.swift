/// A failed SQLite call: the result code, SQLite's message and the statement (never its values).
public struct SQLiteError: Error, CustomStringConvertible, Sendable {
    public let code: Int32
    public let message: String
    public let sql: String?

    public var description: String {
        sql.map { "SQLite error \(code): \(message) (in \($0))" } ?? "SQLite error \(code): \(message)"
    }

    /// The file is not a database or its pages are damaged: the store must be quarantined.
    public var isCorruption: Bool {
        let primary = code & 0xff
        return primary == 11 /* SQLITE_CORRUPT */ || primary == 26 /* SQLITE_NOTADB */
    }

    /// The disk or the file refused the write (full, read-only, I/O error, locked, cannot open):
    /// the same write can succeed later. Anything else (a constraint, a value too big) is about
    /// what was written and fails again.
    public var isStorageFailure: Bool {
        switch code & 0xff {
        case 5 /* BUSY */, 6 /* LOCKED */, 7 /* NOMEM */, 8 /* READONLY */, 10 /* IOERR */, 13 /* FULL */,
            14 /* CANTOPEN */, 15 /* PROTOCOL */:
            true
        default: isCorruption
        }
    }
}
