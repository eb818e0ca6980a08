import RCCore
import TestSupport
import Testing

@testable import RCStore

/// How history keeps values: each fetched document's values once, as a value set that the fetched
/// snapshot and every history entry name. Activating copies no values into history, trimming it
/// deletes only the sets nobody names, and a database of schema 5 (a copy of the values per entry)
/// migrates with every entry's values kept.
@Suite struct HistoryValueSetTests {
    private let t0 = Timestamp(milliseconds: 1_700_000_000_000)

    private func at(_ seconds: Int64) -> Timestamp { Timestamp(milliseconds: t0.milliseconds + seconds * 1_000) }

    private func values(_ version: Int, keys: Int = 50) -> [String: String] {
        Dictionary(uniqueKeysWithValues: (0..<keys).map { ("k\($0)", "v\($0) of \(version)") })
    }

    private func count(_ sql: String, _ path: String) throws -> Int64 {
        try Database(path: path, mode: .readOnly).query(sql) { $0.integer(0) ?? -1 }.first ?? -1
    }

    @Test func anActivationIsRecordedWithoutCopyingItsValuesAndTrimmingDropsOnlyUnnamedSets() throws {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            let store = try StateStore.openForWriting(path: path)
            for version in 1...6 {
                try store.recordFetch(
                    .update(values: RemoteValues(values(version)), templateVersion: "\(version)", etag: nil),
                    at: at(Int64(version)),
                    activate: true, recording: ActivationRecording(keep: 3))
                // Each kept entry names the set its fetch stored: 50 values per entry, no copy. The
                // set pushed out of the history is dropped at once, its record with it.
                let entries = Int64(min(version, 3))
                #expect(try count("SELECT count(*) FROM value_sets", path) == entries)
                #expect(try count("SELECT sum(keys) FROM value_sets", path) == 50 * entries)
            }
            // A fetch not activated replaces the fetched set; the history's sets stay.
            try store.recordFetch(
                .update(values: RemoteValues(values(7)), templateVersion: "7", etag: nil), at: at(7), activate: false)
            try store.recordFetch(
                .update(values: RemoteValues(values(8)), templateVersion: "8", etag: nil), at: at(8), activate: false)
            #expect(try count("SELECT count(*) FROM value_sets", path) == 4)
            #expect(try count("SELECT sum(keys) FROM value_sets", path) == 200)
            // Every kept entry still rolls back to its own values.
            #expect(try store.rollback(to: "4", at: at(9)).get().changedKeys.count == 50)
            #expect(try store.value(forKey: "k3")?.text == "v3 of 4")
            #expect(try store.value(forKey: "k49")?.text == "v49 of 4")
            #expect(try store.activateRecorded(at: at(10), keep: 3)?.templateVersion == "8")
            #expect(try store.value(forKey: "k0")?.text == "v0 of 8")
            #expect(try store.integrityProblems() == nil)
        }
    }

    /// A dropped set's record goes with it, and its id is never given again: the next set comes
    /// after every set ever stored.
    @Test func droppedSetsGoWithTheirRecordsAndTheirIdsAreNotGivenAgain() throws {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            do {
                let store = try StateStore.openForWriting(path: path)
                for version in 1...4 {
                    try store.recordFetch(
                        .update(values: RemoteValues(values(version)), templateVersion: "\(version)", etag: nil),
                        at: at(Int64(version)), activate: true, recording: ActivationRecording(keep: 1))
                }
                #expect(try count("SELECT count(*) FROM value_sets", path) == 1)
                #expect(try count("SELECT sum(length(data)) FROM value_sets", path) > 50 * 8)
                #expect(try store.allValues().map(\.text).sorted() == values(4).values.sorted())
                #expect(try store.status().active.keys == 50)
            }
            let next = try StateStore.openForWriting(path: path)
            #expect(try next.allValues().map(\.text).sorted() == values(4).values.sorted())
            let fourth = try count("SELECT set_id FROM snapshots WHERE kind = 'active'", path)
            try next.recordFetch(
                .update(values: RemoteValues(values(5)), templateVersion: "5", etag: nil), at: at(5), activate: true,
                recording: ActivationRecording(keep: 1))
            #expect(try count("SELECT set_id FROM snapshots WHERE kind = 'active'", path) == fourth + 1)
            #expect(try count("SELECT count(*) FROM value_sets", path) == 1)
            #expect(try next.value(forKey: "k7")?.text == "v7 of 5")
            #expect(try next.integrityProblems() == nil)
        }
    }

    /// A set dropped by a transaction that rolled back is still stored, its record whole.
    @Test func aDropThatRolledBackKeepsTheSet() throws {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            let store = try StateStore.openForWriting(path: path)
            try store.recordFetch(
                .update(values: RemoteValues(values(1)), templateVersion: "1", etag: nil), at: at(1), activate: true,
                recording: ActivationRecording(keep: 1))
            // Nothing names the set inside this transaction, so it is dropped; then it rolls back.
            #expect(throws: StoreError.self) {
                try store.write {
                    try store.db.run("DELETE FROM history")
                    try store.db.run("DELETE FROM snapshots")
                    try store.dropUnusedValueSets()
                    #expect(try store.db.query("SELECT count(*) FROM value_sets") { $0.integer(0) } == [0])
                    throw StoreError.integrityCheckFailed("abandoned on purpose")
                }
            }
            #expect(try count("SELECT sum(keys) FROM value_sets", path) == 50)
            #expect(try store.value(forKey: "k7")?.text == "v7 of 1")
            #expect(try store.integrityProblems() == nil)
        }
    }

    /// A fetch that changes a few of many keys writes only those (a changed value, a removed key, a
    /// new one, a key moving from its default to the same remote value); every value is right after it.
    @Test func aFewChangedKeysAmongManyActivateRight() throws {
        try TemporaryDirectory.with { (dir) throws in
            let store = try StateStore.openForWriting(path: dir.file("state.db"))
            try store.replaceDefaults(["moving": "same"])
            try store.recordFetch(
                .update(values: RemoteValues(values(1, keys: 20)), templateVersion: "1", etag: nil), at: at(1),
                activate: true,
                recording: ActivationRecording(keep: 5))
            var next = values(1, keys: 20)
            next["k3"] = "changed"
            next["k7"] = nil
            next["new"] = "added"
            next["moving"] = "same"
            let activation = try store.recordFetch(
                .update(values: RemoteValues(next), templateVersion: "2", etag: nil), at: at(2), activate: true,
                recording: ActivationRecording(keep: 5))
            #expect(activation?.changedKeys == ["k3", "k7", "new"])
            let all = try store.allValues(prefix: "").map { "\($0.key)=\($0.text)=\($0.source)" }
            let expected = next.map { "\($0.key)=\($0.value)=remote" }.sorted()
            #expect(all.sorted() == expected)
            #expect(try store.rollback(at: at(3)).get().changedKeys == ["k3", "k7", "new"])
            #expect(try store.value(forKey: "k7")?.text == "v7 of 1")
            #expect(try store.value(forKey: "moving")?.source == .default)
        }
    }

    /// Values activated before history was kept become the baseline entry, every key of them (the
    /// copy once took `last_insert_rowid()` per row, which moves on after the first row).
    @Test func theBaselineKeepsEveryKey() throws {
        try TemporaryDirectory.with { (dir) throws in
            let store = try StateStore.openForWriting(path: dir.file("state.db"))
            try store.recordFetch(
                .update(values: RemoteValues(values(1, keys: 5)), templateVersion: "1", etag: nil), at: at(1),
                activate: true)
            try store.recordFetch(
                .update(values: ["k0": "new"], templateVersion: "2", etag: nil), at: at(2), activate: false)
            try store.activateRecorded(at: at(2), keep: 5, trialDeadline: at(62))
            let back = try #require(try store.rollBackTrial(.timedOut, at: at(3)))
            #expect(back.changedKeys == ["k0", "k1", "k2", "k3", "k4"])
            for key in 0..<5 { #expect(try store.value(forKey: "k\(key)")?.text == "v\(key) of 1") }
        }
    }

    @Test func aSchemaFiveDatabaseMigratesWithEveryEntrysValuesAndThePendingFetch() throws {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            // A database as the issue-27 release left it: two entries with their copies of the
            // values, the second active, and a newer fetch pending.
            try makeDatabase(
                at: path, schemaVersion: 5,
                rows: """
                    INSERT INTO meta (key, value) VALUES ('device_id', 'dev-1');
                    INSERT INTO active_values (key, value) VALUES ('url', 'b'), ('title', 'Shop');
                    INSERT INTO fetched_values (key, value) VALUES ('url', 'c'), ('title', 'Shop');
                    INSERT INTO snapshots (kind, template_version, activated_at) VALUES ('active', '2', 2000);
                    INSERT INTO snapshots (kind, template_version, fetched_at, pending) VALUES ('fetched', '3', 3000, 1);
                    INSERT INTO history (id, template_version, activated_at, source, changed_keys, outcome)
                        VALUES (1, '1', 1000, 'fetch', 2, 'superseded'), (2, '2', 2000, 'fetch', 1, 'active');
                    INSERT INTO history_values (history_id, key, value)
                        VALUES (1, 'url', 'a'), (1, 'title', 'Shop'), (2, 'url', 'b'), (2, 'title', 'Shop');
                    """)
            let store = try StateStore.openForWriting(path: path)
            #expect(try count("PRAGMA user_version", path) == Int64(Schema.currentVersion))
            #expect(try count("SELECT count(*) FROM sqlite_master WHERE name = 'history_values'", path) == 0)
            #expect(try store.history().map(\.templateVersion) == ["2", "1"])
            #expect(try store.status().pending)
            // The pending fetch activates with its values, and is recorded.
            #expect(try store.activateRecorded(at: at(3), keep: 5)?.changedKeys == ["url"])
            #expect(try store.value(forKey: "url")?.text == "c")
            // Each migrated entry rolls back to its own values.
            #expect(try store.rollback(to: "1", at: at(4)).get().changedKeys == ["url"])
            #expect(try store.value(forKey: "url")?.text == "a")
            #expect(try store.value(forKey: "title")?.text == "Shop")
            #expect(
                try store.history().map(\.outcome) == [.rolledBack(.byRollback), .rolledBack(.byRollback), .active])
            #expect(try store.integrityProblems() == nil)
            // A newer fetch drops the migrated fetched set once nothing names it.
            try store.recordFetch(
                .update(values: ["url": "d"], templateVersion: "4", etag: nil), at: at(5), activate: true,
                recording: ActivationRecording(keep: 5))
            #expect(try store.value(forKey: "url")?.text == "d")
            #expect(
                try count(
                    "SELECT count(*) FROM value_sets WHERE id NOT IN (SELECT set_id FROM history WHERE set_id IS NOT NULL)",
                    path) == 0)
        }
    }
    /// An activation and a rollback name a value set; neither copies one (before schema 7 each
    /// copied every value into a table of the active values).
    @Test func activatingAndRollingBackCopyNoValues() throws {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            let store = try StateStore.openForWriting(path: path)
            for version in 1...2 {
                try store.recordFetch(
                    .update(values: RemoteValues(values(version)), templateVersion: "\(version)", etag: nil),
                    at: at(Int64(version)),
                    activate: true, recording: ActivationRecording(keep: 5))
            }
            #expect(try count("SELECT sum(keys) FROM value_sets", path) == 100)
            #expect(try store.rollback(at: at(3)).get().changedKeys.count == 50)
            #expect(try count("SELECT sum(keys) FROM value_sets", path) == 100)
            #expect(
                try count(
                    "SELECT set_id FROM snapshots WHERE kind = 'active'", path)
                    == count("SELECT set_id FROM history WHERE template_version = '1'", path))
            #expect(try store.value(forKey: "k9")?.text == "v9 of 1")
            #expect(try store.status().active.keys == 50)
        }
    }

    /// A database of schema 6 kept the active values in a table of their own: they become a value
    /// set the active snapshot names, with nothing lost, and so do values left without a snapshot.
    @Test(arguments: [true, false])
    func aSchemaSixDatabaseMigratesItsActiveValuesToASet(withSnapshot: Bool) throws {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            try makeDatabase(
                at: path, schemaVersion: 6,
                rows: """
                    INSERT INTO meta (key, value) VALUES ('device_id', 'dev-1');
                    INSERT INTO active_values (key, value) VALUES ('url', 'b'), ('title', 'Shop');
                    INSERT INTO value_sets (id) VALUES (2);
                    INSERT INTO set_values (set_id, key, value) VALUES (2, 'url', 'a'), (2, 'title', 'Shop');
                    INSERT INTO history (id, template_version, activated_at, source, changed_keys, outcome, set_id)
                        VALUES (1, '1', 1000, 'fetch', 2, 'superseded', 2), (2, '2', 2000, 'fetch', 1, 'active', NULL);
                    """)
            if withSnapshot {
                try Database(path: path, mode: .readWrite).execute(
                    "INSERT INTO snapshots (kind, template_version, activated_at) VALUES ('active', '2', 2000)")
            }
            let store = try StateStore.openForWriting(path: path)
            #expect(try count("PRAGMA user_version", path) == Int64(Schema.currentVersion))
            #expect(
                try count("SELECT count(*) FROM sqlite_master WHERE name IN ('active_values', 'set_values')", path)
                    == 0)
            #expect(try store.value(forKey: "url")?.text == "b")
            #expect(try store.value(forKey: "title")?.source == .remote)
            #expect(try store.status().active.keys == 2)
            #expect(try store.status().active.templateVersion == (withSnapshot ? "2" : nil))
            // The migrated set is the active snapshot's, and a rollback to the entry before it works.
            #expect(try store.rollback(to: "1", at: at(3)).get().changedKeys == ["url"])
            #expect(try store.value(forKey: "url")?.text == "a")
            #expect(try store.integrityProblems() == nil)
        }
    }

    /// A database of schema 7 kept each set's values as rows: migration 8 folds each set into its
    /// record, byte for byte (a NUL byte, an empty value, spellings Swift's `==` calls equal, rows
    /// stored out of key order), with every snapshot and history entry still naming its set; rows
    /// of a set already dropped go with the table.
    @Test func aSchemaSevenDatabaseFoldsEachSetsRowsIntoItsRecord() throws {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            try makeDatabase(
                at: path, schemaVersion: 7,
                rows: """
                    INSERT INTO meta (key, value) VALUES ('device_id', 'dev-1');
                    INSERT INTO value_sets (id) VALUES (2), (3);
                    INSERT INTO set_values (set_id, key, value) VALUES
                        (2, 'url', 'a'), (2, 'caf' || char(233), 'NFC'), (2, 'cafe' || char(769), 'NFD'),
                        (2, 'empty', ''), (2, 'nul' || char(0) || 'key', 'x' || char(0) || 'y'),
                        (3, 'url', 'b'), (3, 'title', 'Shop'),
                        (9, 'url', 'dropped');
                    INSERT INTO history (id, template_version, activated_at, source, changed_keys, outcome, set_id)
                        VALUES (1, '1', 1000, 'fetch', 2, 'superseded', 2), (2, '2', 2000, 'fetch', 1, 'active', 3);
                    INSERT INTO snapshots (kind, template_version, activated_at, set_id) VALUES ('active', '2', 2000, 3);
                    INSERT INTO snapshots (kind, template_version, fetched_at, pending, set_id) VALUES ('fetched', '2', 2000, 0, 3);
                    """)
            // A newer `rcagent` reads it as it is until the daemon migrates it: rows, through its views.
            let early = try #require(try StateStore.openForReading(path: path))
            #expect(try early.value(forKey: "url")?.text == "b")
            #expect(try early.allValues().map(\.key) == ["title", "url"])
            #expect(try early.status().active.keys == 2)
            let store = try StateStore.openForWriting(path: path)
            #expect(try count("PRAGMA user_version", path) == 8)
            #expect(
                try count(
                    "SELECT count(*) FROM sqlite_master WHERE name IN ('set_values', 'active_values', 'fetched_values')",
                    path) == 0)
            #expect(try count("SELECT sum(keys) FROM value_sets WHERE id IN (2, 3)", path) == 7)
            #expect(try store.value(forKey: "url")?.text == "b")
            #expect(try store.status().active.keys == 2)
            #expect(try store.rollback(to: "1", at: at(3)).get().changedKeys.count == 6)
            let expected: [(String, String)] = [
                ("caf\u{e9}", "NFC"), ("cafe\u{301}", "NFD"), ("empty", ""), ("nul\u{0}key", "x\u{0}y"), ("url", "a"),
            ]
            let all = try store.allValues()
            #expect(
                all.map { Array($0.key.utf8) }
                    == expected.map { Array($0.0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) })
            for (key, value) in expected {
                #expect(try store.value(forKey: key).map { Array($0.text.utf8) } == Array(value.utf8), "\(key)")
            }
            #expect(try store.integrityProblems() == nil)
        }
    }
}
