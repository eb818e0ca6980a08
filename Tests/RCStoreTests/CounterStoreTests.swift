import RCCore
import TestSupport
import Testing

@testable import RCStore

/// The metrics' counters in a real SQLite file: each fetch outcome and each logged event counts
/// once, in its own transaction, past the bounded event log and across a reopen.
@Suite struct CounterStoreTests {
    private let t0 = Timestamp(milliseconds: 1_700_000_000_000)

    private func at(_ seconds: Int64) -> Timestamp { Timestamp(milliseconds: t0.milliseconds + seconds * 1_000) }

    @Test func fetchesAndEventsAreCountedAndSurviveAReopen() throws {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            let store = try StateStore.openForWriting(path: path)
            #expect(try store.counters() == StateStore.Counters())
            try store.recordFetch(
                .update(values: ["a": "1"], templateVersion: "1", etag: nil), at: at(1), activate: false)
            try store.activateRecorded(at: at(1), keep: 20)
            try store.recordFetch(.noChange, at: at(2), activate: false)
            try store.recordFetch(.noChange, at: at(3), activate: false)
            try store.recordFetch(
                .failure(error: "boom", backoffStep: 1, nextAttempt: at(10), throttledUntil: nil), at: at(4),
                activate: false)
            try store.recordFetch(
                .failure(error: "429", backoffStep: 1, nextAttempt: at(70), throttledUntil: at(70)), at: at(5),
                activate: false)
            try store.markStale(reason: "ping", at: at(6))
            try store.markStale(reason: "again", at: at(7))  // already set: not a new mark
            try store.recordFetch(
                .update(values: ["a": "2"], templateVersion: "2", etag: nil), at: at(8), activate: false)
            try store.activateRecorded(at: at(8), keep: 20, trialDeadline: at(68))
            try store.rollBackTrial(.healthCheckFailed(exitCode: 1), at: at(9))

            let expected = try store.counters()
            #expect(expected.fetches == [.success: 2, .noChange: 2, .failure: 1, .throttled: 1])
            #expect(expected.events(.activated) == 2)
            #expect(expected.events(.rolledBack) == 1)
            #expect(expected.events(.staleSet) == 1)
            #expect(expected.events(.fetchFailed) == 2)
            #expect(expected.events(.activationDeferred) == 0)
            #expect(try StateStore.openForWriting(path: path).counters() == expected)
        }
    }

    @Test func countersOutliveTheBoundedEventLog() throws {
        try TemporaryDirectory.with { (dir) throws in
            let store = try StateStore.openForWriting(path: dir.file("state.db"))
            let fetches = StateStore.eventLimit + 50
            for index in 0..<fetches {
                try store.recordFetch(
                    .failure(error: "down", backoffStep: 1, nextAttempt: nil, throttledUntil: nil),
                    at: at(Int64(index)), activate: false)
            }
            #expect(Int64(try store.events(limit: 100_000).count) <= StateStore.eventLimit)
            #expect(try store.counters().fetches[.failure] == fetches)
            #expect(try store.counters().events(.fetchFailed) == fetches)
        }
    }

    /// A failed transaction counts nothing.
    @Test func aRolledBackWriteCountsNothing() throws {
        try TemporaryDirectory.with { (dir) throws in
            let store = try StateStore.openForWriting(path: dir.file("state.db"))
            #expect(throws: StoreError.self) {
                try store.write {
                    try store.bumpCounter(StateStore.fetchCounterPrefix + "failure")
                    try store.db.run("SELECT * FROM no_such_table")
                }
            }
            #expect(try store.counters().fetches.isEmpty)
        }
    }
}
