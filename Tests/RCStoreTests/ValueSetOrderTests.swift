import RCCore
import TestSupport
import Testing

@testable import RCStore

/// A value set is stored in key order, as SQLite's BINARY collation orders keys (their bytes), on
/// consecutive rowids: read by rowid, it is read in key order with no index seek. The order the
/// store computes must be SQLite's exactly, or the activation's merge would miss changes.
@Suite struct ValueSetOrderTests {
    /// Keys that share their first 16 bytes or more, keys shorter than 16 bytes that start longer
    /// ones, multi-byte UTF-8, and spellings Swift's `==` calls equal.
    private static let awkwardKeys: [String] = {
        var keys = ["", "a", "ab", "abc", "Z", "z", "\u{e9}", "e\u{301}", "\u{1F600}", "\u{7F}", "~"]
        let long = "0123456789abcdef"
        keys += [
            long, long + "0", long + "00", long + "1", long + "\u{e9}", long + "e\u{301}", String(long.dropLast()),
        ]
        var random = SplitMix64(seed: 30)
        for _ in 0..<500 {
            let length = Int(random.next() % 24)
            keys.append(
                String(
                    String.UnicodeScalarView(
                        (0..<length).map { _ in
                            let pick = random.next() % 4
                            return Unicode.Scalar(
                                UInt32(
                                    pick == 0 ? 0x30 + random.next() % 3 : pick == 1 ? 0x61 : pick == 2 ? 0xE9 : 0x1F600
                                ))!
                        })))
        }
        return keys
    }()

    @Test func theStoresKeyOrderIsTheOrderOfTheBytes() {
        var seen = Set<[UInt8]>()
        let keys = Self.awkwardKeys.filter { seen.insert(Array($0.utf8)).inserted }
        let sorted = RemoteValues(keys.map { (key: $0, value: "") }).keys.map { Array($0.utf8) }
        #expect(sorted == keys.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) })
    }

    @Test func aStoredSetReadByRowidIsReadInSQLitesKeyOrder() throws {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            let store = try StateStore.openForWriting(path: path)
            var values: [String: String] = [:]
            for (index, key) in Self.awkwardKeys.enumerated() { values[key] = "v\(index)" }
            // More than a statement's rows, and a remainder.
            for index in 0..<(RowsInsert.rowsPerStatement * 3 + 7) { values["k\(index)"] = "n\(index)" }
            try store.recordFetch(
                .update(values: RemoteValues(values), templateVersion: "1", etag: nil), at: Timestamp(milliseconds: 1),
                activate: true
            )
            let db = try Database(path: path, mode: .readOnly)
            let range = try #require(
                try db.query(
                    "SELECT first_row, last_row, id FROM value_sets WHERE id = (SELECT set_id FROM snapshots WHERE kind = 'active')"
                ) {
                    ($0.integer(0), $0.integer(1), $0.integer(2))
                }.first)
            let (first, last) = (try #require(range.0), try #require(range.1))
            #expect(last - first + 1 == Int64(values.count))
            let byRowid = try db.query(
                "SELECT key FROM set_values WHERE rowid BETWEEN ? AND ? ORDER BY rowid",
                [.integer(first), .integer(last)]
            ) { Array(($0.text(0) ?? "").utf8) }
            let byIndex = try db.query(
                "SELECT key FROM set_values WHERE set_id = ? ORDER BY key", [.integer(range.2 ?? -1)]
            ) { Array(($0.text(0) ?? "").utf8) }
            #expect(byRowid.count == values.count)
            #expect(byRowid == byIndex)
            // Every value as stored, through the view readers use.
            for (key, value) in values { #expect(try store.value(forKey: key)?.text == value) }
        }
    }

    /// A fetch activated in its own transaction merges the set it just stored from memory
    /// (``HeldSet``); an activation in a later one reads both sets back from the database. Both must
    /// give the same changes, byte for byte, for keys in awkward orders, values that differ only in
    /// spelling Swift calls equal, keys that come and go, and defaults that equal the value.
    @Test func theMergeFromMemoryFindsTheChangesTheMergeFromTheDatabaseFinds() throws {
        try TemporaryDirectory.with { (dir) throws in
            let held = try StateStore.openForWriting(path: dir.file("held.db"))
            let stored = try StateStore.openForWriting(path: dir.file("stored.db"))
            var random = SplitMix64(seed: 31)
            let keys = Array(Set(Self.awkwardKeys.map { Array($0.utf8) })).map { String(decoding: $0, as: UTF8.self) }
            let spellings = ["x", "\u{e9}", "e\u{301}", "", "y"]
            func pick() -> String { spellings[Int(random.next() % UInt64(spellings.count))] }
            var defaults: [String: String] = [:]
            for key in keys where random.next() % 3 == 0 { defaults[key] = pick() }
            try held.replaceDefaults(defaults)
            try stored.replaceDefaults(defaults)
            func bytes(_ change: KeyChange) -> [[UInt8]?] {
                [Array(change.key.utf8), change.old.map { Array($0.utf8) }, change.new.map { Array($0.utf8) }]
            }
            var compared = 0
            for version in 1...8 {
                var values: [String: String] = [:]
                for key in keys where random.next() % 4 != 0 { values[key] = pick() }
                let record = FetchRecord.update(values: RemoteValues(values), templateVersion: "\(version)", etag: nil)
                let at = Timestamp(milliseconds: Int64(version))
                let fromMemory = try #require(
                    try held.recordFetch(record, at: at, activate: true, withValues: true)?.changes)
                try stored.recordFetch(record, at: at, activate: false)
                let fromDatabase = try #require(try stored.activate(at: at, withValues: true)?.changes)
                #expect(fromMemory.count == fromDatabase.count)
                let difference = zip(fromMemory, fromDatabase).first {
                    bytes($0) != bytes($1) || $0.source != $1.source
                }
                #expect(difference == nil, "version \(version): \(String(describing: difference))")
                compared += fromMemory.count
            }
            // Changes were found to compare: the two merges agreeing on nothing proves nothing.
            #expect(compared > 500)
        }
    }

    /// `sqlite3 state.db .dump` and a restore (or any copy that inserts the rows again) renumber the
    /// rows of a table without an INTEGER PRIMARY KEY, in rowid order: every set's recorded range
    /// then points where its rows no longer are, and where the next stored set's rows will be. A
    /// range whose first and last rows are not its set's is not used: the set is read through its
    /// index, and neither the activation's changes nor the reader file take another set's rows.
    @Test func aRangeThatNoLongerHoldsItsSetsRowsIsReadThroughTheIndex() throws {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            let store = try StateStore.openForWriting(path: path)
            store.maintainReaderFile(at: dir.file("reader.db")) { Issue.record("reader file not written: \($0)") }
            func values(_ version: Int) -> [String: String] {
                Dictionary(uniqueKeysWithValues: (0..<150).map { ("k\($0)", "v\($0) of \(version)") })
            }
            // The first set's rows are dropped when the second is activated: the second's rows sit
            // after a gap of 150 rowids.
            for version in 1...2 {
                try store.recordFetch(
                    .update(values: RemoteValues(values(version)), templateVersion: "\(version)", etag: nil),
                    at: Timestamp(milliseconds: Int64(version)), activate: true)
            }
            try Self.renumberValueRows(path)
            // The next set gets the rowids the active set's range still names.
            try store.recordFetch(
                .update(values: RemoteValues(values(3)), templateVersion: "3", etag: nil),
                at: Timestamp(milliseconds: 3),
                activate: false)
            let reader = try #require(try StateStore.openReaderFile(path: dir.file("reader.db")))
            #expect(try reader.value(forKey: "k7")?.text == "v7 of 2")
            #expect(try reader.allValues().count == 150)
            let activation = try store.activate(at: Timestamp(milliseconds: 4), withValues: true)
            #expect(activation?.changedKeys.count == 150)
            #expect(activation?.changes?.first { $0.key == "k7" }?.old == "v7 of 2")
            #expect(try store.value(forKey: "k7")?.text == "v7 of 3")
        }
    }

    /// The status takes a snapshot's key count from its set's range of rows while the range holds
    /// the set, and counts the rows otherwise: either way the count is the values'. Sets of no key,
    /// one, and more than a statement's rows; a fetched set beside the active one; and the rows
    /// renumbered as by a dump and restore.
    @Test func theStatusCountsEachSnapshotsKeys() throws {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            let store = try StateStore.openForWriting(path: path)
            let db = try Database(path: path, mode: .readOnly)
            func expectCounts(_ step: String) throws {
                let status = try store.status()
                func counted(_ view: String) throws -> Int {
                    Int(try db.query("SELECT count(*) FROM \(view)") { $0.integer(0) ?? -1 }.first ?? -1)
                }
                #expect(status.active.keys == (try counted("active_values")), "\(step): active")
                #expect(status.fetched.keys == (try counted("fetched_values")), "\(step): fetched")
            }
            func fetch(_ keys: Int, _ version: Int, activate: Bool) throws {
                let values = RemoteValues((0..<keys).map { (key: "k\($0)", value: "v\(version)") })
                try store.recordFetch(
                    .update(values: values, templateVersion: "\(version)", etag: nil),
                    at: Timestamp(milliseconds: Int64(version)), activate: activate)
            }
            try expectCounts("new")
            for (version, keys) in [0, 1, RowsInsert.rowsPerStatement * 2 + 50].enumerated() {
                try fetch(keys, version + 1, activate: true)
                try expectCounts("\(keys) keys")
            }
            try fetch(7, 4, activate: false)
            try expectCounts("fetched beside active")
            #expect(try store.status().active.keys == RowsInsert.rowsPerStatement * 2 + 50)
            try Self.renumberValueRows(path)
            try expectCounts("renumbered")
        }
    }

    /// The value rows of the database at `path` as a dump restored gives them back: the same rows
    /// in the same order, numbered from 1.
    private static func renumberValueRows(_ path: String) throws {
        try Database(path: path, mode: .readWrite).execute(
            """
            BEGIN IMMEDIATE;
            CREATE TEMP TABLE copy AS SELECT set_id, key, value FROM set_values ORDER BY rowid;
            DELETE FROM set_values;
            INSERT INTO set_values (set_id, key, value) SELECT set_id, key, value FROM copy ORDER BY rowid;
            COMMIT;
            """)
    }
}
