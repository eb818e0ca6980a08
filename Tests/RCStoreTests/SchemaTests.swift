import RCCore
import TestSupport
import Testing

@testable import RCStore

/// A new database is made from ``Schema/fresh`` in one script, not by replaying the migrations:
/// the two must leave the same database, schema and rows, or a device that started on this
/// release and one that upgraded to it would differ.
@Suite struct SchemaTests {
    @Test func aNewDatabaseIsWhatTheMigrationsLeave() throws {
        try TemporaryDirectory.with { (dir) throws in
            let migrated = dir.file("migrated.db")
            do {
                let db = try Database(path: migrated, mode: .readWrite)
                try db.transaction { try Schema.migrate(db, from: 0) }
            }
            let fresh = dir.file("state.db")
            _ = try StateStore.openForWriting(path: fresh)
            let a = try Self.contents(migrated)
            var b = try Self.contents(fresh)
            // The store adds its device id to a new database: a row the migrations do not make.
            #expect(b.contains("meta: device_id"))
            b.removeAll { $0 == "meta: device_id" }
            #expect(a.first { $0.hasPrefix("schema:") } != nil)
            #expect(a == b)
        }
    }

    @Test func anExistingDatabaseStillMigratesFromItsVersion() throws {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            try makeDatabase(at: path, schemaVersion: 1)
            _ = try StateStore.openForWriting(path: path)
            let raw = try Database(path: path, mode: .readOnly)
            #expect(try raw.query("PRAGMA user_version") { $0.integer(0) } == [Int64(Schema.currentVersion)])
            #expect(
                try raw.query("SELECT count(*) FROM sqlite_master WHERE name = 'value_sets'") { $0.integer(0) } == [1])
        }
    }

    /// Every schema entry (type, name, table, SQL text), the user version and every row of every
    /// table (sqlite_sequence included), as sorted lines; the meta table's keys only.
    private static func contents(_ path: String) throws -> [String] {
        try contents(of: try Database(path: path, mode: .readOnly))
    }

    /// The schema, `user_version` and rows of `db`, one line each, sorted.
    static func contents(of db: Database) throws -> [String] {
        var lines = try db.query("SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master") {
            "schema: \($0.text(0) ?? "") \($0.text(1) ?? "") \($0.text(2) ?? "") \($0.text(3) ?? "")"
        }
        lines += try db.query("PRAGMA user_version") { "version: \($0.integer(0) ?? -1)" }
        let tables = try db.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'meta'") {
            $0.text(0) ?? ""
        }
        for table in tables {
            let columns = try db.query("SELECT name FROM pragma_table_info(?)", [.text(table)]) { $0.text(0) ?? "" }
            let row = columns.map { "quote(\"\($0)\")" }.joined(separator: " || '|' || ")
            lines += try db.query("SELECT \(row) FROM \"\(table)\"") { "\(table): \($0.text(0) ?? "")" }
        }
        lines += try db.query("SELECT key FROM meta") { "meta: \($0.text(0) ?? "")" }
        return lines.sorted()
    }
}
