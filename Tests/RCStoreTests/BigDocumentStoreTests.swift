import RCCore
import TestSupport
import Testing

@testable import RCStore

/// A writer bounds SQLite's page caches (``Database/cacheMemoryLimit``, tighter while a big document
/// is stored) so that a document near the size limit does not fill every connection's cache at once.
/// A bound on memory only: documents far bigger than it are stored, activated and copied to the
/// reader file whole. Serialized: the bound is SQLite's, process-wide, and the big document's test
/// holds the tighter one while the other checks the usual one.
@Suite(.serialized) struct BigDocumentStoreTests {
    private let t0 = Timestamp(milliseconds: 1_700_000_000_000)

    @Test func aWriterBoundsThePageCaches() throws {
        try TemporaryDirectory.with { (dir) throws in
            _ = try StateStore.openForWriting(path: dir.file("state.db"))
            #expect(Database.appliedCacheMemoryLimit == Database.cacheMemoryLimit)
        }
    }

    @Test func documentsManyTimesTheCacheBoundAreStoredActivatedAndReadWhole() throws {
        try TemporaryDirectory.with { (dir) throws in
            let store = try StateStore.openForWriting(path: dir.file("state.db"))
            store.maintainReaderFile(at: dir.file("reader.db")) { Issue.record("reader file not written: \($0)") }
            let bound = Int(Database.bigDocumentCacheMemoryLimit)
            #expect(2 * bound > Database.bigDocumentBytes)
            // One value twice the bound, and many keys whose values add up to twice the bound.
            let big = String(repeating: "v", count: 2 * bound)
            var first: [String: String] = ["big": big]
            for k in 0..<(2 * bound / 200) { first["key_\(k)"] = String(repeating: "x", count: 190) + " \(k)" }
            let activated = try #require(
                try store.recordFetch(
                    .update(values: RemoteValues(first), templateVersion: "1", etag: nil), at: t0, activate: true))
            #expect(activated.changedKeys.count == first.count)
            #expect(Database.appliedCacheMemoryLimit == Database.cacheMemoryLimit, "the big document's bound is lifted")
            let reader = try #require(try StateStore.openReaderFile(path: dir.file("reader.db")))
            let read = try reader.allValues()
            #expect(read.count == first.count)
            #expect(Dictionary(uniqueKeysWithValues: read.map { ($0.key, $0.text) }) == first)
            #expect(try reader.value(forKey: "big")?.text == big)

            // The next document changes every other key and the big value's last byte.
            var second = first
            second["big"] = String(big.dropLast()) + "w"
            for k in stride(from: 0, to: 2 * bound / 200, by: 2) { second["key_\(k)"] = "changed \(k)" }
            let next = try #require(
                try store.recordFetch(
                    .update(values: RemoteValues(second), templateVersion: "2", etag: nil), at: t0 + .seconds(1),
                    activate: true))
            #expect(Set(next.changedKeys) == Set(second.keys.filter { second[$0] != first[$0] }))
            let fresh = try #require(try StateStore.openReaderFile(path: dir.file("reader.db")))
            #expect(Dictionary(uniqueKeysWithValues: try fresh.allValues().map { ($0.key, $0.text) }) == second)
        }
    }
}
