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

    private func withStore<T>(_ body: (StateStore, TemporaryDirectory) throws -> T) throws -> T {
        try withReaderFileStore(body)
    }

    /// A connection of its own on `dir`'s state database with a trigger that makes every event of
    /// `kinds` whose detail names "bad" fail its transaction (after the changed keys were found).
    private func refusingBad(_ kinds: String, in dir: TemporaryDirectory) throws -> Database {
        let raw = try Database(path: dir.file("state.db"), mode: .readWrite)
        try raw.execute(
            """
            CREATE TRIGGER refuse_bad AFTER INSERT ON events
            WHEN NEW.kind IN (\(kinds)) AND NEW.detail LIKE '%"bad"%' BEGIN SELECT RAISE(ABORT, 'refused'); END
            """)
        return raw
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

    private func fetch(
        _ store: StateStore, _ values: [String: String], _ version: Int, activate: Bool,
        recording: ActivationRecording? = nil
    ) throws {
        try store.recordFetch(
            .update(values: RemoteValues(values), templateVersion: "\(version)", etag: nil),
            at: t0 + .seconds(Int64(version)),
            activate: activate, recording: recording)
    }

    private func activeSet(_ store: StateStore) throws -> Int64? {
        try store.wrap { () throws(SQLiteError) in try store.activeValueSet().integer }
    }

    /// The staging database keeps the value tables it holds when a write leaves them as they are,
    /// and changes only the keys an activation or a rollback changed: after each kind of change the
    /// file still reads exactly as the state database, and the active values are copied whole only
    /// when most of them changed or another connection wrote.
    @Test func theValueTablesAreCopiedOnlyWhenTheyChangedAndStayExact() throws {
        try withStore { store, dir in
            let path = dir.file("reader.db")
            func record(_ values: [String: String], _ version: Int, activate: Bool = true) throws {
                try fetch(store, values, version, activate: false)
                if activate { try store.activateRecorded(at: t0 + .seconds(Int64(version)), keep: 5) }
            }
            try store.replaceDefaults(["key3": "default 3", "extra": "default extra"])
            try record(values("one"), 1)
            try expectSame(store, path, "first activation")
            let copies = store.activeValueCopies
            // Writes that leave the active set as it is copy nothing.
            try store.markStale(reason: "pushed", at: t0)
            try store.recordFetch(.noChange, at: t0 + .seconds(1), activate: false)
            try record(values("pending"), 2, activate: false)
            try expectSame(store, path, "a fetch not activated")
            #expect(store.activeValueCopies == copies)
            // A few keys changed, removed (one with a default) and added: only those.
            var few = values("one")
            few["key0"] = "changed"
            few["key3"] = nil
            few["key4"] = nil
            few["new"] = "added"
            try record(few, 3)
            try expectSame(store, path, "a few keys changed")
            #expect(store.activeValueCopies == copies)
            // Every key changed: copied whole.
            try record(values("two"), 4)
            try expectSame(store, path, "every key changed")
            #expect(store.activeValueCopies == copies + 1)
            // A rollback to the set with a few keys changed: whole again (most differ).
            _ = try store.rollback(to: "3", at: t0 + .seconds(5))
            try expectSame(store, path, "rolled back")
            // New defaults are copied; the active values stay.
            try store.replaceDefaults(["key4": "default 4"])
            try expectSame(store, path, "new defaults")
            let afterDefaults = store.activeValueCopies
            #expect(afterDefaults == copies + 3)
            // Another connection's commit: nothing is known of what it changed, so all is copied.
            let other = try StateStore.openForWriting(path: dir.file("state.db"))
            try other.markStale(reason: "another writer", at: t0 + .seconds(6))
            try store.setNote(.reportTopic, "x")
            try store.recordFetch(.noChange, at: t0 + .seconds(7), activate: false)
            try expectSame(store, path, "after another connection's commit")
            #expect(store.activeValueCopies == afterDefaults + 1)
            // And removing every remote value (an empty set) by a few changes.
            try record(values("small", 0..<3), 8)
            try record([:], 9)
            try expectSame(store, path, "no remote values")
        }
    }

    /// The reader file's `active_values` and the state database's active record (decoded on its
    /// own, ``StoredValueRecord``), byte for byte, in key order.
    private func expectSameBytes(
        _ store: StateStore, _ path: String, _ step: String, sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) throws {
        let reader = try Database(path: path, mode: .readOnly)
        let copied = try reader.query(
            "SELECT hex(CAST(key AS BLOB)), hex(CAST(value AS BLOB)) FROM active_values ORDER BY key"
        ) {
            "\($0.text(0) ?? "") \($0.text(1) ?? "")"
        }
        let hex = try store.wrap { () throws(SQLiteError) in
            try store.db.query(
                "SELECT hex(data) FROM value_sets WHERE id = (SELECT set_id FROM snapshots WHERE kind = 'active')"
            ) { $0.text(0) ?? "" }.first ?? ""
        }
        func hexOf(_ text: String) -> String {
            text.utf8.map { ($0 < 16 ? "0" : "") + String($0, radix: 16, uppercase: true) }.joined()
        }
        let truth = try #require(StoredValueRecord.decode(hex: hex)).map { "\(hexOf($0.key)) \(hexOf($0.value))" }
        #expect(copied == truth, "\(step)", sourceLocation: sourceLocation)
    }

    /// A reader file built after an activation in the write that stored its values takes them from
    /// memory (the set's record is not read back whole), in place (too big for the staging
    /// database) or staged; any other copy reads the set's record. Either way the file holds the same bytes: keys and
    /// values with NUL bytes, empty values, keys sharing their first 16 bytes, spellings Swift's
    /// `==` calls equal, more rows than one statement inserts.
    @Test func aBigActivationsOwnValuesAreCopiedFromMemoryAndExactly() throws {
        try withStore { store, dir in
            let path = dir.file("reader.db")
            let long = String(repeating: "x", count: 500)
            var big = Dictionary(uniqueKeysWithValues: (0..<3_000).map { ("key\($0)", "\($0) \(long)") })
            big["nul\u{0}key"] = "nul\u{0}value"
            big["empty"] = ""
            big["0123456789abcdefA"] = "a"
            big["0123456789abcdefB"] = "b"
            big["caf\u{E9}"] = "NFC"
            let tricky = RemoteValues(big.map { ($0.key, $0.value) } + [("cafe\u{301}", "NFD")])
            func activate(_ values: RemoteValues, _ version: Int) throws {
                try store.recordFetch(
                    .update(values: values, templateVersion: "\(version)", etag: nil),
                    at: t0 + .seconds(Int64(version)),
                    activate: true)
            }
            try activate(tricky, 1)
            #expect(store.readerTooBig && store.activeValueCopiesFromMemory == 1)
            #expect(store.storedSet == nil, "held no longer than the write")
            try expectSameBytes(store, path, "activated in the write that stored it")
            // Built in place again by writes that stored no values: from the state database.
            try store.markStale(reason: "pushed", at: t0 + .seconds(2))
            try fetch(store, big.mapValues { $0 + "!" }, 3, activate: false)
            try expectSameBytes(store, path, "a fetch not activated")
            _ = try store.activateRecorded(at: t0 + .seconds(3), keep: 5)
            #expect(store.activeValueCopiesFromMemory == 1)
            try expectSameBytes(store, path, "activated by a write of its own")
            // An activation that fails after storing its set: nothing of it is held, and the set a
            // later write stores under the freed id is copied from the database once activated.
            _ = try refusingBad("'activated'", in: dir)
            var bad = big
            bad["bad"] = "refused"
            #expect(throws: StoreError.self) { try activate(RemoteValues(bad), 30) }
            #expect(store.storedSet == nil)
            let freed = try #require(store.lastSetDelta?.to)
            try fetch(store, big.mapValues { $0 + "?" }, 31, activate: false)
            #expect(
                try store.wrap { () throws(SQLiteError) in
                    try store.db.query("SELECT set_id FROM snapshots WHERE kind = 'fetched'") { $0.integer(0) }.first
                } == freed, "the fetch took the id the failed activation freed (else this proves nothing)")
            _ = try store.activateRecorded(at: t0 + .seconds(31), keep: 5)
            #expect(store.activeValueCopiesFromMemory == 1)
            try expectSameBytes(store, path, "activated after a failed activation")
            // Small again: built in place once more (from memory), then in the staging database,
            // from memory too.
            try activate(RemoteValues(values("small")), 4)
            #expect(!store.readerTooBig && store.activeValueCopiesFromMemory == 2)
            try expectSameBytes(store, path, "a small state, built in place")
            try activate(RemoteValues(values("small again")), 5)
            #expect(store.readerStaging != nil && store.activeValueCopiesFromMemory == 3)
            try expectSameBytes(store, path, "a small state, staged")
        }
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
            _ = try refusingBad("'activated'", in: dir)
            try fetch(store, values("one"), 1, activate: true)
            try expectSame(store, path, "first")
            let first = try activeSet(store)
            var bad = values("one")
            bad["key1"] = "bad"
            #expect(throws: StoreError.self) {
                try store.recordFetch(
                    .update(values: RemoteValues(bad), templateVersion: "bad", etag: nil), at: t0 + .seconds(2),
                    activate: true)
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

    /// One store alone: an activation that fails after finding its changed keys, a fetch that
    /// takes the id it freed, a deferred activation, a trial rolled back, a rollback, keys that
    /// differ only in Unicode normalization, and new defaults under active values.
    @Test func everyActivationRollbackAndFailureOfOneStoreLeavesTheReaderFileExact() throws {
        try withStore { store, dir in
            let path = dir.file("reader.db")
            let raw = try refusingBad("'activated', 'rolled-back'", in: dir)
            try store.replaceDefaults(["key5": "default 5", "caf\u{E9}": "default NFC"])
            try fetch(store, values("one"), 1, activate: true)
            _ = try store.activateRecorded(at: t0, keep: 5)
            try expectSame(store, path, "first")
            var bad = values("one")
            bad["key1"] = "bad"
            bad["cafe\u{301}"] = "NFD"
            #expect(throws: StoreError.self) {
                try store.recordFetch(
                    .update(values: RemoteValues(bad), templateVersion: "bad", etag: nil), at: t0 + .seconds(2),
                    activate: true)
            }
            let freed = try #require(store.lastSetDelta?.to)
            // The same id, other values, not activated: the reader file is as it was.
            var pending = values("one")
            pending["key2"] = "pending"
            pending["cafe\u{301}"] = "NFD"
            pending["nul\u{0}key"] = "documents refuse it; the store keeps it whole"
            try fetch(store, pending, 3, activate: false)
            #expect(
                try store.wrap { () throws(SQLiteError) in
                    try store.db.query("SELECT set_id FROM snapshots WHERE kind = 'fetched'") { $0.integer(0) }.first
                } == freed, "the fetch took the id the failed activation freed (else this proves nothing)")
            try expectSame(store, path, "a fetch not activated on a freed id")
            _ = try store.activateRecorded(at: t0 + .seconds(3), keep: 5)
            try expectSame(store, path, "the deferred activation")
            // NFC instead of NFD, as a trial that is rolled back; then a rollback that fails.
            var nfc = pending
            nfc["cafe\u{301}"] = nil
            nfc["caf\u{E9}"] = "NFC"
            try fetch(store, nfc, 4, activate: false)
            _ = try store.activateRecorded(at: t0 + .seconds(4), keep: 5, trialDeadline: t0 + .seconds(60))
            try expectSame(store, path, "the trial")
            _ = try store.rollBackTrial(.timedOut, at: t0 + .seconds(5))
            try expectSame(store, path, "the trial rolled back")
            try raw.execute("UPDATE history SET template_version = 'bad' WHERE template_version = '1'")
            #expect(throws: StoreError.self) { _ = try store.rollback(to: "bad", at: t0 + .seconds(6)) }
            try raw.execute("UPDATE history SET template_version = '1' WHERE template_version = 'bad'")
            try store.markStale(reason: "after the failed rollback", at: t0 + .seconds(6))
            try expectSame(store, path, "a rollback that failed")
            _ = try store.rollback(at: t0 + .seconds(7)).get()  // a refusal throws
            try expectSame(store, path, "a rollback to the first")
            try store.replaceDefaults(["key2": "default 2"])
            try expectSame(store, path, "new defaults under active values")
            // `status` inside a write: in its transaction, not a second one.
            let inside = try store.write { try store.status() }
            #expect(inside.active == (try store.status()).active)
        }
    }

    /// Around ``SetDelta/keyLimit`` changed keys, and a reader file that could not be written for
    /// a while (its directory gone) across activations.
    @Test func manyChangedKeysAndAMissedReaderFileLeaveTheReaderFileExact() throws {
        try TemporaryDirectory.with { (dir) throws in
            let store = try StateStore.openForWriting(path: dir.file("state.db"))
            try FileBytes.makeDirectories(dir.file("readers"))
            let path = dir.file("readers/reader.db")
            var failures = 0
            store.maintainReaderFile(at: path) { _ in failures += 1 }
            let keys = 0..<(SetDelta.keyLimit * 4 + 200)
            try fetch(store, values("one", keys), 1, activate: true)
            try expectSame(store, path, "first")
            for (version, changed) in [(2, SetDelta.keyLimit), (3, SetDelta.keyLimit + 1)] {
                var next = values("one", keys)
                for key in 0..<changed { next["key\(key)"] = "v\(version)" }
                let copies = store.activeValueCopies
                try fetch(store, next, version, activate: true)
                try expectSame(store, path, "\(changed) keys changed")
                #expect(store.activeValueCopies == copies + (changed > SetDelta.keyLimit ? 1 : 0))
            }
            // Gone, then two activations and a rollback, then back.
            unlink(path)
            #expect(rmdir(dir.file("readers")) == 0)
            var next = values("one", keys)
            next["key1"] = "while gone"
            try fetch(store, next, 4, activate: true, recording: ActivationRecording(keep: 5))
            next["key2"] = "while gone"
            try fetch(store, next, 5, activate: true, recording: ActivationRecording(keep: 5))
            _ = try store.rollback(at: t0 + .seconds(6)).get()  // a refusal throws
            #expect(failures == 1)
            try FileBytes.makeDirectories(dir.file("readers"))
            try store.markStale(reason: "back", at: t0 + .seconds(7))
            try expectSame(store, path, "after the directory came back")
        }
    }

    /// The staging database over its limit by an activation's few changed keys (the file is
    /// built in place), and back under it by a rollback.
    @Test func aDeltaThatOutgrowsTheStagingDatabaseAndARollbackBackLeaveTheReaderFileExact() throws {
        try withStore { store, dir in
            let path = dir.file("reader.db")
            let filler = String(repeating: "x", count: 3_000)
            let small = Dictionary(uniqueKeysWithValues: (0..<200).map { ("key\($0)", "\($0) " + filler) })
            try fetch(store, small, 1, activate: true)
            _ = try store.activateRecorded(at: t0, keep: 5)
            try expectSame(store, path, "first")
            var big = small
            for key in 0..<30 { big["big\(key)"] = String(repeating: "\(key % 10)", count: 30_000) }
            try fetch(store, big, 2, activate: false)
            _ = try store.activateRecorded(at: t0 + .seconds(2), keep: 5)
            try expectSame(store, path, "over the limit")
            #expect(store.readerTooBig, "built in place (else this proves nothing)")
            _ = try store.rollback(at: t0 + .seconds(3)).get()  // a refusal throws
            try expectSame(store, path, "rolled back under it")
            try store.markStale(reason: "again", at: t0 + .seconds(4))
            #expect(!store.readerTooBig)
            try expectSame(store, path, "staged again")
            // A value over the limit: built in place at once, the staging database left as it was;
            // a rollback to the set it holds copies nothing.
            let copies = store.activeValueCopies
            try store.recordFetch(
                .update(
                    values: ["huge": String(repeating: "h", count: StateStore.stagingLimit + 1)], templateVersion: "5",
                    etag: nil),
                at: t0 + .seconds(5), activate: true,
                recording: ActivationRecording(keep: 5))
            try expectSame(store, path, "a value over the limit")
            _ = try store.rollback(at: t0 + .seconds(6)).get()  // a refusal throws
            try expectSame(store, path, "rolled back from it")
            try store.markStale(reason: "once more", at: t0 + .seconds(7))
            try expectSame(store, path, "staged once more")
            #expect(store.activeValueCopies == copies)
        }
    }
}
