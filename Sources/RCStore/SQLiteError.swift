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
}
