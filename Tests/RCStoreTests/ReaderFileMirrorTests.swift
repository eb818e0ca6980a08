import Glibc
import RCCore
import RCSystem
import TestSupport
import Testing

@testable import RCStore

/// The reader file's copy of the value tables (``ReaderMirror``, ``SetDelta``): kept or changed by a
/// few keys only while it provably holds what the state database says, whatever wrote it, failed
/// or was rolled back in between.
@Suite struct ReaderFileMirrorTests {
    private let t0 = Timestamp(milliseconds: 1_700_000_000_000)

    /// A writable store keeping `reader.db` beside it; a failure to write it is an issue.
    private func withStore<T>(_ body: (StateStore, TemporaryDirectory) throws -> T) throws -> T {
        try TemporaryDirectory.with { (dir) throws in
            let store = try StateStore.openForWriting(path: dir.file("state.db"))
            store.maintainReaderFile(at: dir.file("reader.db")) { Issue.record("reader file not written: \($0)") }
            return try body(store, dir)
        }
    }

    /// The reader file at `path` answers `get`, `list` and `status` as the state database does.
    private func expectSame(
        _ store: StateStore, _ path: String, _ step: String, sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) throws {
        let reader = try #require(try StateStore.openReaderFile(path: path), sourceLocation: sourceLocation)
        #expect(try reader.allValues() == (try store.allValues()), "\(step)", sourceLocation: sourceLocation)
        let (status, truth) = (try reader.status(), try store.status())
        #expect(status.active == truth.active, "\(step)", sourceLocation: sourceLocation)
        #expect(status.stale == truth.stale, "\(step)", sourceLocation: sourceLocation)
    }

    private func values(_ tag: String, _ range: Range<Int> = 0..<200) -> [String: String] {
        Dictionary(uniqueKeysWithValues: range.map { ("key\($0)", "\(tag) \($0)") })
    }

    private func fetch(_ store: StateStore, _ values: [String: String], _ version: Int, activate: Bool) throws {
        try store.recordFetch(
            .update(values: values, templateVersion: "\(version)", etag: nil), at: t0 + .seconds(Int64(version)),
            activate: activate)
    }

    private func activeSet(_ store: StateStore) throws -> Int64? {
        try store.wrap { () throws(SQLiteError) in try store.activeValueSet().integer }
    }

    /// `writeReaderFile` builds the file "from the committed state": that includes another
    /// connection's commits since this store's last write (its `data_version` then is not the one
    /// the copy was made at).
    @Test func aReaderFileWrittenAfterAnotherConnectionsCommitHoldsItsDefaultsAndValues() throws {
        try withStore { store, dir in
            let path = dir.file("reader.db")
            try store.replaceDefaults(["d": "old default"])
            try fetch(store, values("one"), 1, activate: true)
            try expectSame(store, path, "before")
            let other = try StateStore.openForWriting(path: dir.file("state.db"))
            try other.replaceDefaults(["d": "new default"])
            var few = values("one")
            few["key7"] = "changed elsewhere"
            try fetch(other, few, 2, activate: true)
            try store.writeReaderFile(to: path)
            try expectSame(store, path, "after another connection's defaults and activation")
        }
    }

    /// A value set id is free again when the transaction that took it rolls back (AUTOINCREMENT
    /// counts in the transaction): a delta computed by an activation that failed names an id that
    /// another connection may give to other values.
    @Test func aSetIdFreedByAFailedActivationAndTakenByAnotherConnectionIsNotTakenForTheDelta() throws {
        try withStore { store, dir in
            let path = dir.file("reader.db")
            // An activation of version "bad" fails after its changed keys were found.
            let raw = try Database(path: dir.file("state.db"), mode: .readWrite)
            try raw.execute(
                """
                CREATE TRIGGER refuse_bad AFTER INSERT ON events
                WHEN NEW.kind = 'activated' AND NEW.detail LIKE '%"bad"%' BEGIN SELECT RAISE(ABORT, 'refused'); END
                """)
            try fetch(store, values("one"), 1, activate: true)
            try expectSame(store, path, "first")
            let first = try activeSet(store)
            var bad = values("one")
            bad["key1"] = "bad"
            #expect(throws: StoreError.self) {
                try store.recordFetch(
                    .update(values: bad, templateVersion: "bad", etag: nil), at: t0 + .seconds(2), activate: true)
            }
            #expect(try activeSet(store) == first)
            // Another writer takes the same id for values that differ elsewhere.
            let other = try StateStore.openForWriting(path: dir.file("state.db"))
            var good = values("one")
            good["key2"] = "good"
            try fetch(other, good, 3, activate: true)
            #expect(try activeSet(store) == store.lastSetDelta?.to, "the id was taken again (else this proves nothing)")
            try store.writeReaderFile(to: path)
            try expectSame(store, path, "after the other writer's activation")
        }
    }
}
