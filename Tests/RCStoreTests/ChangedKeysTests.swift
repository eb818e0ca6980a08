import RCCore
import TestSupport
import Testing

@testable import RCStore

/// Which keys an activation reports as changed: those whose value `get` returns (remote, else
/// default) differs, whichever table the key is in before and after.
@Suite struct ChangedKeysTests {
    private let t0 = Timestamp(milliseconds: 1_700_000_000_000)

    private func withStore<T>(_ body: (StateStore) throws -> T) throws -> T {
        try TemporaryDirectory.with { (dir) throws in
            try body(try StateStore.openForWriting(path: dir.file("state.db")))
        }
    }

    /// Every case at once: a key's value stays when it moves between remote and a default equal to
    /// it, in either direction; it changes when either side differs or the key appears or goes.
    @Test(arguments: [false, true])
    func aKeyChangesWhenTheValueGetReturnsChanges(withValues: Bool) throws {
        try withStore { store throws in
            try store.replaceDefaults(["to-default": "same", "from-default": "d", "to-other-default": "other"])
            try store.recordFetch(
                .update(
                    values: ["to-default": "same", "to-other-default": "x", "kept": "k", "gone": "g", "edited": "1"],
                    templateVersion: "1", etag: nil), at: t0, activate: true)
            let activation = try store.recordFetch(
                .update(
                    values: ["from-default": "d", "kept": "k", "edited": "2", "new": "n"], templateVersion: "2",
                    etag: nil), at: t0 + .seconds(1), activate: true, withValues: withValues)
            #expect(activation?.changedKeys == ["edited", "gone", "new", "to-other-default"])
            if withValues {
                #expect(
                    activation?.changes == [
                        KeyChange(key: "edited", old: "1", new: "2", source: .remote),
                        KeyChange(key: "gone", old: "g", new: nil, source: nil),
                        KeyChange(key: "new", old: nil, new: "n", source: .remote),
                        KeyChange(key: "to-other-default", old: "x", new: "other", source: .default),
                    ])
            }
        }
    }

    /// Keys come back in the order of their bytes, from both walks merged: remote keys and keys
    /// only the old snapshot had, interleaved.
    @Test func changedKeysAreInByteOrderAcrossBothWalks() throws {
        try withStore { store throws in
            try store.recordFetch(
                .update(values: ["b": "1", "d": "1", "\u{e9}": "1"], templateVersion: "1", etag: nil), at: t0,
                activate: true)
            let activation = try store.recordFetch(
                .update(values: ["a": "2", "c": "2", "e": "2", "Z": "2"], templateVersion: "2", etag: nil),
                at: t0 + .seconds(1), activate: true)
            #expect(activation?.changedKeys == ["Z", "a", "b", "c", "d", "e", "\u{e9}"])
        }
    }
    /// Keys and values are compared by their bytes, as SQLite and `get` see them: a key spelled
    /// with a combining accent is another key than the precomposed one (Swift's `==` says they are
    /// equal), and a value that changes only its spelling is a change.
    @Test func canonicallyEquivalentSpellingsAreDifferentKeysAndValues() throws {
        try withStore { store throws in
            try store.recordFetch(
                .update(values: ["caf\u{e9}": "1", "name": "Jos\u{e9}"], templateVersion: "1", etag: nil), at: t0,
                activate: true)
            let activation = try store.recordFetch(
                .update(values: ["cafe\u{301}": "1", "name": "Jose\u{301}"], templateVersion: "2", etag: nil),
                at: t0 + .seconds(1), activate: true, withValues: true)
            #expect(
                activation?.changedKeys.map { Array($0.utf8) } == [
                    Array("cafe\u{301}".utf8), Array("caf\u{e9}".utf8), Array("name".utf8),
                ])
            #expect(activation?.changes?.last?.new.map { Array($0.utf8) } == Array("Jose\u{301}".utf8))
        }
    }

    /// The merge of two sets' records reports what the join it replaced reported, row for row and
    /// byte for byte: random sets and defaults over keys of every shape (empty, a NUL byte, sharing
    /// 16 bytes or more, multi-byte UTF-8) and values that differ only in their spelling. The join
    /// reads the two sets as decoded from their records on their own (``StoredValueRecord``).
    @Test func theMergeReportsWhatTheJoinItReplacedReported() throws {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            let store = try StateStore.openForWriting(path: path)
            let long = "0123456789abcdef"
            var pool = [
                "", "a", "a\u{0}", "a\u{0}b", "ab", "\u{e9}", "\u{7F}", "\u{1F600}", "z", long, long + "0",
                long + "\u{e9}", long + long, long + long + "x", String(long.dropLast()),
            ]
            for index in 0..<150 { pool += ["k\(index)", long + "\(index)"] }
            var random = SplitMix64(seed: 27)
            func pick(_ percent: UInt64) -> [String: String] {
                var values: [String: String] = [:]
                for key in pool where random.next() % 100 < percent {
                    values[key] = ["x", "y", "", "\u{e9}", "e\u{301}"][Int(random.next() % 5)]
                }
                return values
            }
            func bytes(_ text: String?) -> String { text.map { "\(Array($0.utf8))" } ?? "nil" }
            let join = """
                SELECT u.key, coalesce(a.value, d.value), coalesce(f.value, d.value),
                    CASE WHEN f.value IS NOT NULL THEN 'remote' WHEN d.value IS NOT NULL THEN 'default' END
                FROM (SELECT key FROM a UNION SELECT key FROM f) u
                    LEFT JOIN a ON a.key = u.key LEFT JOIN f ON f.key = u.key LEFT JOIN defaults d ON d.key = u.key
                WHERE coalesce(a.value, d.value) IS NOT coalesce(f.value, d.value)
                ORDER BY 1
                """
            for round in 0..<6 {
                let at = t0 + .seconds(Int64(2 * round))
                try store.replaceDefaults(pick(30))
                try store.recordFetch(
                    .update(values: RemoteValues(pick(60)), templateVersion: "a\(round)", etag: nil), at: at,
                    activate: true)
                try store.recordFetch(
                    .update(values: RemoteValues(pick(60)), templateVersion: "b\(round)", etag: nil), at: at,
                    activate: false)
                let db = try Database(path: path, mode: .readWrite)
                for (table, kind) in [("a", "active"), ("f", "fetched")] {
                    try db.execute("CREATE TEMP TABLE \(table) (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                    let hex =
                        try db.query(
                            "SELECT hex(data) FROM value_sets WHERE id = (SELECT set_id FROM snapshots WHERE kind = ?)",
                            [.text(kind)]
                        ) { $0.text(0) ?? "" }.first ?? ""
                    for (key, value) in try #require(StoredValueRecord.decode(hex: hex)) {
                        try db.run("INSERT INTO \(table) VALUES (?, ?)", [.text(key), .text(value)])
                    }
                }
                let expected = try db.query(join) { row in
                    [bytes(row.text(0)), bytes(row.text(1)), bytes(row.text(2)), row.text(3) ?? "nil"]
                }
                let activation = try #require(try store.activate(at: at + .seconds(1), withValues: true))
                let changes = try #require(activation.changes).map { change in
                    [bytes(change.key), bytes(change.old), bytes(change.new), change.source?.rawValue ?? "nil"]
                }
                #expect(!expected.isEmpty)
                #expect(changes == expected)
            }
        }
    }
}
