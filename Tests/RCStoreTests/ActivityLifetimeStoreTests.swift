import RCCore
import TestSupport
import Testing

@testable import RCStore

/// The device's own steps for Live Activities in a real SQLite file: a message dated far ahead cannot
/// take a slot, an activity ends 8 h after its start and goes 4 h later, and `activity remove` removes
/// one at once. Times are injected.
@Suite struct ActivityLifetimeStoreTests {
    private let t0 = Timestamp(milliseconds: 1_700_000_000_000)
    private let s0: Int64 = 1_700_000_000
    private let hour: Int64 = 3_600

    private func withStore<T>(_ body: (StateStore) throws -> T) throws -> T {
        try TemporaryDirectory.with { (dir) throws in
            try body(try StateStore.openForWriting(path: dir.file("state.db")))
        }
    }

    private func start(_ ts: Int64, id: String = "order-42") -> LiveActivityMessage {
        LiveActivityMessage(
            token: id, event: .start, timestamp: ts, contentState: .object([("eta", .integer(10))]),
            attributesType: "Delivery", attributes: .object([("order", .integer(42))]))
    }

    /// The lock-out as it was found: starts dated in year 9999 filling every slot. Now each is refused
    /// before it can take one or evict an ended activity, and a real start goes through afterwards.
    @Test func farFutureStartsAreRefusedAndARealStartWorksAfterwards() throws {
        try withStore { store in
            try store.applyActivity(start(s0, id: "ended"), now: t0)
            try store.applyActivity(
                LiveActivityMessage(token: "ended", event: .end, timestamp: s0 + 1, contentState: nil), now: t0)
            for index in 0..<(StateStore.maximumActivities + 1) {
                let outcome = try store.applyActivity(
                    start(LiveActivityMessage.maximumSeconds, id: "future-\(index)"), now: t0)
                guard case let .refused(reason) = outcome else {
                    Issue.record("a far-future start was not refused: \(outcome)")
                    return
                }
                #expect(reason.contains("more than 24 h ahead"))
            }
            #expect(try store.activities(now: t0).map(\.id) == ["ended"])
            #expect(try store.events().filter { $0.kind == "activity-removed" }.isEmpty)
            #expect(try store.applyActivity(start(s0 + 2, id: "real"), now: t0).eventKind == .activityStarted)
        }
    }

    @Test func anActivityOlderThanEightHoursIsEndedThenRemovedFourHoursLater() throws {
        try withStore { store in
            try store.applyActivity(start(s0), now: t0)
            try store.applyActivity(start(s0, id: "later"), now: t0 + .seconds(hour))
            #expect(try store.nextActivityDeadline() == t0 + .seconds(8 * hour))
            #expect(try store.expireActivities(now: t0 + .seconds(8 * hour - 1)) == .init())
            #expect(try store.expireActivities(now: t0 + .seconds(8 * hour)) == .init(ended: ["order-42"]))
            let ended = try #require(try store.activity(id: "order-42", now: t0 + .seconds(8 * hour)))
            #expect(ended.state == .ended && ended.endedAt == t0 + .seconds(8 * hour))
            #expect(try store.lastEvent(.activityEnded)?.detail == ended.json)
            // The later one's end comes next, then the first one's removal.
            #expect(try store.nextActivityDeadline() == t0 + .seconds(9 * hour))
            #expect(try store.expireActivities(now: t0 + .seconds(9 * hour)) == .init(ended: ["later"]))
            #expect(try store.nextActivityDeadline() == t0 + .seconds(12 * hour))
            #expect(try store.expireActivities(now: t0 + .seconds(12 * hour)) == .init(removed: ["order-42"]))
            #expect(try store.activities(now: t0 + .seconds(12 * hour)).map(\.id) == ["later"])
            // A daemon that was down for a day: the later one is due for removal, once.
            #expect(try store.expireActivities(now: t0 + .seconds(24 * hour)) == .init(removed: ["later"]))
            #expect(try store.nextActivityDeadline() == nil)
            #expect(
                try store.events().map(\.kind).filter { $0.hasPrefix("activity-") } == [
                    "activity-started", "activity-started", "activity-ended", "activity-ended", "activity-removed",
                    "activity-removed",
                ])
        }
    }

    @Test func aDaemonDownForTwelveHoursRemovesAnOldActivityAtOnce() throws {
        try withStore { store in
            try store.applyActivity(start(s0), now: t0)
            #expect(try store.expireActivities(now: t0 + .seconds(13 * hour)) == .init(removed: ["order-42"]))
            #expect(try store.lastEvent(.activityRemoved)?.detail["reason"] == .string("ended 8 h after its start"))
            // Remembered like any removal: the retained start does not bring it back.
            #expect(try store.applyActivity(start(s0), now: t0 + .seconds(13 * hour)).activity == nil)
        }
    }

    @Test func removingAnActivityLogsItAndKeepsItsReplayOut() throws {
        try withStore { store in
            try store.applyActivity(start(s0), now: t0)
            #expect(try store.removeActivity(id: "missing", now: t0, reason: "removed on request") == nil)
            let removed = try #require(try store.removeActivity(id: "order-42", now: t0, reason: "removed on request"))
            #expect(removed.id == "order-42")
            #expect(try store.activities(now: t0).isEmpty)
            let event = try #require(try store.lastEvent(.activityRemoved))
            #expect(event.detail["id"] == .string("order-42"))
            #expect(event.detail["reason"] == .string("removed on request"))
            #expect(try store.applyActivity(start(s0), now: t0).activity == nil)
            #expect(try store.applyActivity(start(s0 + 1), now: t0).eventKind == .activityStarted)
        }
    }
}
