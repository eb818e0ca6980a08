import Glibc
import RCCore
import RCSystem
import TestSupport
import Testing

@testable import RCStore

/// A new state database never takes the pages of a WAL that an earlier one left behind. SQLite
/// applies a WAL it finds beside a database that is not empty, whichever database wrote it; a new
/// database was an empty file once (SQLite deletes a WAL beside one of those), and is now linked
/// into place whole, built by the one schema script that built the old one: page for page the same
/// layout, so the old WAL's pages fit and the old state came back in the new database.
@Suite struct NewDatabaseWALTests {
    private let t0 = Timestamp(milliseconds: 1_700_000_000_000)

    @Test func aNewDatabaseIgnoresTheWALOfOneRemovedWithoutIt() throws {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            do {
                let old = try StateStore.openForWriting(path: path)
                try old.replaceDefaults(["k": "old value"])
                _ = try old.markStale(reason: "the old database's", at: t0)
            }  // closed: its WAL and shared memory stay (as the daemon's do)
            #expect(FileBytes.exists(path + "-wal"), "the old database's WAL is left")
            // The database removed by hand to start afresh, its WAL and shared memory left behind.
            try #require(unlink(path) == 0)

            let store = try StateStore.openForWriting(path: path)
            #expect(try store.integrityProblems() == nil)
            #expect(try store.allValues().isEmpty, "no value of the old database")
            #expect(try !store.status().stale.isSet, "not the old database's stale flag")
            // And once more through a new connection, after this one checkpointed what it wrote.
            try store.replaceDefaults(["n": "new value"])
            let reopened = try #require(try StateStore.openForReading(path: path))
            #expect(try reopened.allValues().map(\.key) == ["n"])
        }
    }

    @Test func anExistingDatabaseKeepsItsWAL() throws {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            let writer = try StateStore.openForWriting(path: path)
            try writer.replaceDefaults(["k": "kept"])
            // A second writer (`rcagent mark-stale` beside the daemon) opens the database in place:
            // the WAL holding the first one's commit is the database's own.
            let second = try StateStore.openForWriting(path: path)
            #expect(try second.allValues().map(\.text) == ["kept"])
            _ = try second.markStale(reason: "pushed", at: t0)
            #expect(try writer.status().stale.isSet)
        }
    }
}
