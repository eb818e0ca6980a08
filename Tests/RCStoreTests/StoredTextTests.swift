import RCCore
import TestSupport
import Testing

@testable import RCStore

/// Texts from outside are kept cut to their limit, and the event log is bounded in bytes as well as
/// in count, in a real SQLite file.
@Suite struct StoredTextTests {
    private let t0 = Timestamp(milliseconds: 1_700_000_000_000)

    private func withStore<T>(_ body: (StateStore, String) throws -> T) throws -> T {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            return try body(try StateStore.openForWriting(path: path), path)
        }
    }

    @Test func aMegabyteStaleReasonIsKeptCutInStatusAndInTheEvent() throws {
        try withStore { store, _ in
            // Multi-byte scalars all the way: the cut falls on a scalar boundary, never inside one.
            let reason = "mqtt: CONFIG_STATE=" + String(repeating: "é", count: 500_000)
            #expect(try store.markStale(reason: reason, at: t0))
            let kept = try #require(try store.status().stale.reason)
            #expect(kept.utf8.count <= StoredText.maximumReasonBytes)
            #expect(kept.hasPrefix("mqtt: CONFIG_STATE=é") && kept.hasSuffix("…"))
            #expect(try store.lastEvent(.staleSet)?.detail["reason"] == .string(kept))
        }
    }

    @Test func aLongFetchErrorAndNoteAreKeptCut() throws {
        try withStore { store, _ in
            let body = String(repeating: "x", count: 100_000)
            try store.recordFetch(
                .failure(error: "HTTP 500: " + body, backoffStep: 1, nextAttempt: nil, throttledUntil: nil), at: t0,
                activate: false)
            let error = try #require(try store.status().lastError)
            #expect(error.utf8.count <= StoredText.maximumErrorBytes && error.hasPrefix("HTTP 500: xxx"))
            #expect(try store.lastEvent(.fetchFailed)?.detail["error"] == .string(error))
            try store.setNote(.mqttTopics, body)
            #expect(try store.note(.mqttTopics)?.utf8.count ?? 0 <= StoredText.maximumNoteBytes)
        }
    }

    /// Large events (an activity's 4 KiB content state and attributes each) many times over: the log
    /// stays under its byte bound, the newest kept, the oldest gone, the bound checked on the file.
    @Test func theEventLogIsBoundedInBytes() throws {
        try withStore { store, path in
            let big = JSONValue.object([("s", .string(String(repeating: "y", count: 8_000)))])
            for index in 0..<400 {
                try store.recordEvent(.fetchFailed, detail: big, at: t0 + .seconds(Int64(index)))
            }
            let raw = try Database(path: path, mode: .readOnly)
            let total =
                try raw.query("SELECT sum(length(CAST(kind AS BLOB)) + length(CAST(detail AS BLOB))) FROM events") {
                    $0.integer(0) ?? 0
                }.first ?? 0
            #expect(total <= StateStore.eventBytesLimit)
            #expect(total > StateStore.eventBytesLimit - 8_100)  // full, not emptied
            let stored = try raw.query("SELECT sum(size) FROM events") { $0.integer(0) ?? 0 }.first ?? 0
            #expect(stored == total)
            let ids = try store.events().map(\.id)
            #expect(ids.last == 400)
            #expect(ids.count < 400 && ids.count == Int(ids.last! - ids.first! + 1))
        }
    }

    @Test func anEventOverTheBoundAloneStaysAsTheNewest() throws {
        try withStore { store, _ in
            try store.recordEvent(.staleSet, detail: .object([]), at: t0)
            let huge = JSONValue.object([("s", .string(String(repeating: "z", count: 1_100_000)))])
            try store.recordEvent(.fetchFailed, detail: huge, at: t0)
            #expect(try store.events().map(\.known) == [.fetchFailed])
            try store.recordEvent(.staleCleared, detail: .object([]), at: t0)
            #expect(try store.events().map(\.known) == [.staleCleared])
        }
    }

    @Test func migratedEventsGetTheirSizes() throws {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            try makeDatabase(
                at: path, schemaVersion: 2,
                rows: "INSERT INTO events (at, kind, detail) VALUES (1, 'activated', '{\"a\":\"é\"}')")
            _ = try StateStore.openForWriting(path: path)
            let raw = try Database(path: path, mode: .readOnly)
            #expect(try raw.query("SELECT size FROM events") { $0.integer(0) } == [Int64("activated".utf8.count + 10)])
        }
    }
}
