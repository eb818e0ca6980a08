import RCCore
import TestSupport
import Testing

@testable import RCStore

/// The connection's statement cache, on a real SQLite file: a query's statement is prepared once
/// and reused, reset after each use (no read left open), and a row read after its reset reads nothing.
@Suite struct StatementCacheTests {
    private func withDatabase<T>(_ body: (Database, String) throws -> T) throws -> T {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("cache.db")
            let db = try Database(path: path, mode: .readWrite)
            try db.execute("PRAGMA journal_mode = WAL; CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)")
            return try body(db, path)
        }
    }

    @Test func theSameStatementIsReusedAndItsResultsAreRightEveryTime() throws {
        try withDatabase { (db, _) throws in
            let select = "SELECT v FROM t WHERE k = ?"
            let first = try db.cachedStatement(select)
            #expect(try db.cachedStatement(select) === first)
            for i in 0..<5 {
                try db.run("INSERT OR REPLACE INTO t (k, v) VALUES (?, ?)", [.text("a"), .integer(Int64(i))])
                try db.run("INSERT OR REPLACE INTO t (k, v) VALUES (?, ?)", [.text("b"), .integer(Int64(i * 10))])
                #expect(try db.query(select, [.text("a")]) { $0.integer(0) } == [Int64(i)])
                #expect(try db.query(select, [.text("b")]) { $0.integer(0) } == [Int64(i * 10)])
                // A binding does not carry over to the next use: an unbound parameter is NULL.
                #expect(try db.query(select) { $0.integer(0) }.isEmpty)
            }
            #expect(try db.cachedStatement(select) === first)
            #expect(db.cachedStatements == 2)  // the select and the insert
        }
    }

    @Test func aQueryLeavesNoReadOpen() throws {
        try withDatabase { (db, _) throws in
            try db.run("INSERT INTO t (k, v) VALUES ('a', 1), ('b', 2), ('c', 3)")
            let all = "SELECT k FROM t ORDER BY k"
            // `first` of a query: the statement stepped past the first row only in the caller's mind.
            #expect(try db.query(all) { $0.text(0) }.first == "a")
            #expect(!(try db.cachedStatement(all).isBusy))
            // A failing statement is reset too.
            #expect(throws: SQLiteError.self) { try db.run("INSERT INTO t (k, v) VALUES ('a', 9)") }
            #expect(!(try db.cachedStatement("INSERT INTO t (k, v) VALUES ('a', 9)").isBusy))
        }
    }

    @Test func aRowDoesNotOutliveItsReset() throws {
        try withDatabase { (db, _) throws in
            try db.run("INSERT INTO t (k, v) VALUES ('a', 1), ('b', 2)")
            let all = "SELECT k, v FROM t ORDER BY k"
            // A row that escapes its query reads nothing, not whatever the statement holds next.
            let escaped = try #require(try db.query(all) { $0 }.first)
            #expect(escaped.text(0) == nil && escaped.integer(1) == nil && escaped.isNull(0))
            let statement = try db.cachedStatement(all)
            let first = try #require(try statement.step())
            #expect(first.text(0) == "a")
            _ = try statement.step()
            #expect(first.text(0) == nil)  // the next step ended it
            // Busy, it is not handed out again; done with, it is, reset: from the first row.
            #expect(try db.cachedStatement(all) !== statement)
            statement.reset()
            #expect(try db.cachedStatement(all) === statement)
            let second = try #require(try statement.step())
            #expect(second.text(0) == "a")
            statement.reset()
            #expect(second.integer(1) == nil)
        }
    }

    @Test func aStatementInUseIsNotSharedWithAQueryInsideItsRows() throws {
        try withDatabase { (db, _) throws in
            try db.run("INSERT INTO t (k, v) VALUES ('a', 1), ('b', 2)")
            let all = "SELECT k FROM t ORDER BY k"
            let nested = try db.query(all) { outer in
                (outer.text(0), (try? db.query(all) { $0.text(0) }) ?? [])
            }
            #expect(nested.map(\.0) == ["a", "b"])
            #expect(nested.map(\.1) == [["a", "b"], ["a", "b"]])
        }
    }

    @Test func theCacheIsBounded() throws {
        try withDatabase { (db, _) throws in
            for i in 0..<(Database.cacheLimit + 10) {
                #expect(try db.query("SELECT \(i)") { $0.integer(0) } == [Int64(i)])
            }
            #expect(db.cachedStatements == Database.cacheLimit)
        }
    }

    /// The store's status, the most frequent read, is right after the statements it uses are reused.
    @Test func theStoreReadsRightThroughReusedStatements() throws {
        try TemporaryDirectory.with { (dir) throws in
            let store = try StateStore.openForWriting(path: dir.file("state.db"))
            let t0 = Timestamp(milliseconds: 1_700_000_000_000)
            #expect(try store.status().stale.isSet == false)
            try store.markStale(reason: "ping", at: t0)
            #expect(try store.status().stale.isSet)
            try store.recordFetch(.update(values: ["a": "1"], templateVersion: "7", etag: nil), at: t0, activate: true)
            let status = try store.status()
            #expect(!status.stale.isSet && status.active.templateVersion == "7" && status.active.keys == 1)
            try store.recordFetch(.update(values: [:], templateVersion: "8", etag: nil), at: t0, activate: true)
            #expect(try store.status().active.keys == 0)
            #expect(try store.value(forKey: "a") == nil)
        }
    }
}
