import RCCore
import TestSupport
import Testing

@testable import RCStore

/// A value set is stored as one record (``ValueRecord``), in key order as SQLite's BINARY collation
/// orders keys (their bytes). The order the store computes must be SQLite's exactly, or the
/// activation's merge would miss changes; the record must hold every key and value byte for byte;
/// and a damaged record must be an error that names it, never a crash or a wrong value.
@Suite struct ValueRecordTests {
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

    @Test func aStoredSetsRecordHoldsEveryValueInSQLitesKeyOrder() throws {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            let store = try StateStore.openForWriting(path: path)
            var values: [String: String] = [
                "nul\u{0}key": "nul\u{0}value", "empty": "", "big": String(repeating: "x", count: 300),
            ]
            for (index, key) in Self.awkwardKeys.enumerated() { values[key] = "v\(index)" }
            for index in 0..<307 { values["k\(index)"] = "n\(index)" }
            try store.recordFetch(
                .update(values: RemoteValues(values), templateVersion: "1", etag: nil), at: Timestamp(milliseconds: 1),
                activate: true
            )
            let db = try Database(path: path, mode: .readOnly)
            let (hex, keys) = try #require(
                try db.query(
                    "SELECT hex(data), keys FROM value_sets WHERE id = (SELECT set_id FROM snapshots WHERE kind = 'active')"
                ) { ($0.text(0) ?? "", $0.integer(1) ?? -1) }.first)
            let stored = try #require(StoredValueRecord.decode(hex: hex))
            #expect(keys == Int64(values.count))
            #expect(
                stored.map { Array($0.key.utf8) }
                    == values.keys.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) })
            #expect(stored.allSatisfy { entry in values[entry.key].map { Array($0.utf8) } == Array(entry.value.utf8) })
            // Every value as the store reads it, and the whole list, byte for byte.
            for (key, value) in values {
                #expect(try store.value(forKey: key).map { Array($0.text.utf8) } == Array(value.utf8))
            }
            #expect(try store.value(forKey: "k99x") == nil)
            let all = try store.allValues()
            #expect(all.map { Array($0.key.utf8) } == stored.map { Array($0.key.utf8) })
            #expect(
                try store.allValues(prefix: "k1").count == values.keys.filter { $0.utf8.starts(with: "k1".utf8) }.count)
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

    /// The status takes a snapshot's key count from its record's row: sets of no key, one, and
    /// more than a statement's rows; a fetched set beside the active one.
    @Test func theStatusCountsEachSnapshotsKeys() throws {
        try TemporaryDirectory.with { (dir) throws in
            let store = try StateStore.openForWriting(path: dir.file("state.db"))
            func fetch(_ keys: Int, _ version: Int, activate: Bool) throws {
                let values = RemoteValues((0..<keys).map { (key: "k\($0)", value: "v\(version)") })
                try store.recordFetch(
                    .update(values: values, templateVersion: "\(version)", etag: nil),
                    at: Timestamp(milliseconds: Int64(version)), activate: activate)
            }
            #expect(try store.status().active.keys == 0)
            for (version, keys) in [0, 1, RowsInsert.rowsPerStatement * 2 + 50].enumerated() {
                try fetch(keys, version + 1, activate: true)
                #expect(try store.status().active.keys == keys)
                #expect(try store.status().fetched.keys == keys)
            }
            try fetch(7, 4, activate: false)
            #expect(try store.status().active.keys == RowsInsert.rowsPerStatement * 2 + 50)
            #expect(try store.status().fetched.keys == 7)
        }
    }

    /// The record's bytes do not depend on how they were cut while written: chunks smaller than one
    /// text, than one length, and the default.
    @Test func aRecordWrittenInSmallChunksIsTheSame() throws {
        let values = RemoteValues([
            ("a", String(repeating: "y", count: 1_000)), ("b", ""), ("c\u{0}", "\u{e9}"),
            (String(repeating: "k", count: 200), "v"),
        ])
        func encoded(_ chunk: Int) throws -> [UInt8] {
            var bytes: [UInt8] = []
            try ValueRecord.encode(values, chunk: chunk) { (piece, offset) throws(SQLiteError) in
                #expect(offset == bytes.count)
                #expect(piece.count <= max(chunk, 16))
                bytes += piece
            }
            return bytes
        }
        let whole = try encoded(64 << 10)
        #expect(whole.count == ValueRecord.size(of: values))
        #expect(try encoded(16) == whole)
        #expect(try encoded(17) == whole)
        let hex = whole.map {
            String($0, radix: 16, uppercase: true).count == 1
                ? "0" + String($0, radix: 16, uppercase: true) : String($0, radix: 16, uppercase: true)
        }.joined()
        #expect(
            StoredValueRecord.decode(hex: hex)?.map { "\($0.key)=\($0.value)" }
                == values.map { "\($0.key)=\($0.value)" })
    }

    /// A record cut short, holding another number of keys than its row says, with keys out of order
    /// or twice, or with a length that runs past its end or never ends, is SQLITE_CORRUPT naming the set and the byte: never a
    /// crash, a read past the record, or a wrong value.
    @Test(
        arguments: [
            ("cut short", [3, 0x61, 0x62], 1, "at byte 0: a text of 3 bytes runs past its end"),
            ("no value", [1, 0x61], 1, "at byte 2: a length runs past its end"),
            ("fewer keys", [1, 0x61, 1, 0x62], 2, "it ends after 1 of its 2 keys"),
            ("more keys", [1, 0x61, 1, 0x62, 1, 0x63, 0], 1, "it ends after 2 of its 1 keys"),
            ("endless length", [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01], 1, "at byte 0: a length is too long"),
            ("out of order", [1, 0x62, 0, 1, 0x61, 0], 2, "at byte 3: key 2 does not sort after the key before it"),
            ("a key twice", [1, 0x61, 0, 1, 0x61, 0], 2, "at byte 3: key 2 does not sort after the key before it"),
        ] as [(String, [UInt8], Int, String)])
    func aDamagedRecordIsAnErrorNamingIt(_ name: String, bytes: [UInt8], keys: Int, problem: String) throws {
        let failure = bytes.withUnsafeBytes { record -> SQLiteError? in
            var reader = ValueRecord.Reader(record, keys: keys, set: 42)
            do throws(SQLiteError) {
                while try reader.next() != nil {}
                return nil
            } catch {
                return error
            }
        }
        let error = try #require(failure, "\(name)")
        #expect(error.code == 11)
        let message = "\(error)"
        #expect(message.contains("value set 42: its record (\(bytes.count) bytes) is damaged"), "\(message)")
        #expect(message.contains(problem), "\(name): \(message)")
    }

    /// A damaged record in the state database: reads of it fail with the store's error, the
    /// reader file keeps the last good values, and the daemon's other reads go on.
    @Test func aDamagedRecordInTheDatabaseFailsItsReadsOnly() throws {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            let store = try StateStore.openForWriting(path: path)
            try store.replaceDefaults(["d": "default"])
            try store.recordFetch(
                .update(values: ["a": "1", "b": "2"], templateVersion: "1", etag: nil), at: Timestamp(milliseconds: 1),
                activate: true)
            try Database(path: path, mode: .readWrite).execute(
                "UPDATE value_sets SET data = substr(data, 1, 3) WHERE id = (SELECT set_id FROM snapshots WHERE kind = 'active')"
            )
            #expect {
                try store.value(forKey: "b")
            } throws: { "\($0)".contains("is damaged") }
            #expect(try store.status().active.keys == 2)
        }
    }
}
