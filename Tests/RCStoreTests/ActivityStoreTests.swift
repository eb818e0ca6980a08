import RCCore
import TestSupport
import Testing

@testable import RCStore

/// Live Activities in `StateStore` against real SQLite files, one temporary directory per test.
@Suite struct ActivityStoreTests {
    private let t0 = Timestamp(milliseconds: 1_700_000_000_000)
    private let s0: Int64 = 1_700_000_000

    private func withStore<T>(_ body: (StateStore, String) throws -> T) throws -> T {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            return try body(try StateStore.openForWriting(path: path), path)
        }
    }

    private func start(_ ts: Int64, id: String = "order-42", stale: Int64? = nil) -> LiveActivityMessage {
        LiveActivityMessage(
            token: id, event: .start, timestamp: ts, contentState: .object([("eta", .integer(10))]),
            attributesType: "Delivery", attributes: .object([("order", .integer(42))]),
            alert: .init(title: "Order 42", body: "On its way", sound: "chime"), staleDate: stale)
    }

    private func update(_ ts: Int64, id: String = "order-42", eta: Int64) -> LiveActivityMessage {
        LiveActivityMessage(token: id, event: .update, timestamp: ts, contentState: .object([("eta", .integer(eta))]))
    }

    private func end(_ ts: Int64, id: String = "order-42", dismissal: Int64? = nil) -> LiveActivityMessage {
        LiveActivityMessage(token: id, event: .end, timestamp: ts, contentState: nil, dismissalDate: dismissal)
    }

    private func activityEvents(_ store: StateStore) throws -> [String] {
        try store.events().map(\.kind).filter { $0.hasPrefix("activity-") }
    }

    @Test func aSequenceIsAppliedAndLogged() throws {
        try withStore { store, _ in
            #expect(try store.applyActivity(start(s0), now: t0).eventKind == .activityStarted)
            #expect(
                try store.applyActivity(update(s0 + 1, eta: 5), now: t0 + .seconds(1)).eventKind == .activityUpdated)
            #expect(try store.applyActivity(end(s0 + 2), now: t0 + .seconds(2)).eventKind == .activityEnded)
            #expect(try activityEvents(store) == ["activity-started", "activity-updated", "activity-ended"])
            let ended = try #require(try store.activity(id: "order-42", now: t0 + .seconds(3)))
            #expect(ended.state == .ended)
            #expect(ended.contentState == .object([("eta", .integer(5))]))
            #expect(ended.dismissAt == t0 + .seconds(2) + .seconds(4 * 3_600))
            // The event carries the activity as the list shows it.
            #expect(try store.lastEvent(.activityEnded)?.detail == ended.json)
            #expect(
                store.takeCommittedEvents().map(\.kind).suffix(3) == [
                    "activity-started", "activity-updated", "activity-ended",
                ])
        }
    }

    @Test func ignoredAndRefusedMessagesChangeAndLogNothing() throws {
        try withStore { store, _ in
            #expect(
                try store.applyActivity(update(s0, eta: 1), now: t0)
                    == .refused("no activity order-42: an update needs a start first"))
            try store.applyActivity(start(s0 + 10), now: t0)
            let before = try store.activity(id: "order-42", now: t0)
            let outcome = try store.applyActivity(update(s0 + 5, eta: 1), now: t0 + .seconds(1))
            #expect(
                outcome
                    == .ignored(
                        "update for order-42: timestamp 1700000005 is not newer than the last applied 1700000010"))
            #expect(try store.activity(id: "order-42", now: t0) == before)
            #expect(try activityEvents(store) == ["activity-started"])
        }
    }

    /// A flood of starts with distinct ids (anyone who can publish to the device's topic can send
    /// one) stops at the bound with a refusal naming it; activities already kept still update. At
    /// the bound, an ended activity gives its place to a new start (the one due first goes, with
    /// its removal event), so a busy kiosk ending its orders never runs out of places.
    @Test func aFloodOfDistinctIdsStopsAtTheBound() throws {
        try withStore { store, _ in
            for i in 0..<StateStore.maximumActivities {
                #expect(try store.applyActivity(start(s0, id: "flood-\(i)"), now: t0).eventKind == .activityStarted)
            }
            let refused = try store.applyActivity(start(s0, id: "one-more"), now: t0)
            guard case let .refused(reason) = refused else {
                Issue.record("expected a refusal, got \(refused)")
                return
            }
            #expect(reason.contains("none ended, at most \(StateStore.maximumActivities)"), "\(reason)")
            #expect(try store.activities(now: t0).count == StateStore.maximumActivities)
            #expect(try activityEvents(store).count == StateStore.maximumActivities)
            // Kept ones still change; a start repeated for a kept id is an update, not a new row.
            #expect(try store.applyActivity(update(s0 + 1, id: "flood-0", eta: 1), now: t0).eventKind != nil)
            #expect(try store.applyActivity(start(s0 + 2, id: "flood-1"), now: t0).eventKind == .activityUpdated)
            // Two ended (flood-3 due first): the next start takes flood-3's place, then flood-2's.
            try store.applyActivity(end(s0 + 3, id: "flood-2", dismissal: s0 + 9_000), now: t0)
            try store.applyActivity(end(s0 + 3, id: "flood-3", dismissal: s0 + 8_000), now: t0)
            #expect(try store.applyActivity(start(s0, id: "one-more"), now: t0).eventKind == .activityStarted)
            #expect(try store.activity(id: "flood-3", now: t0) == nil)
            let evicted = try #require(try store.lastEvent(.activityRemoved))
            #expect(evicted.detail["id"] == .string("flood-3"))
            #expect(evicted.detail["reason"]?.stringValue?.hasPrefix("evicted") == true)
            #expect(try store.applyActivity(start(s0, id: "two-more"), now: t0).eventKind == .activityStarted)
            #expect(try store.activity(id: "flood-2", now: t0) == nil)
            #expect(try store.activities(now: t0).count == StateStore.maximumActivities)
            if case .refused = try store.applyActivity(start(s0, id: "three-more"), now: t0) {
            } else {
                Issue.record("a start with no ended activity left must be refused")
            }
        }
    }

    @Test func everythingSurvivesReopening() throws {
        try withStore { store, path in
            try store.applyActivity(start(s0, id: "a", stale: s0 + 60), now: t0)
            try store.applyActivity(start(s0, id: "b"), now: t0 + .seconds(1))
            try store.applyActivity(end(s0 + 1, id: "b", dismissal: s0 + 600), now: t0 + .seconds(2))
            let before = try store.activities(now: t0 + .seconds(120))
            let reopened = try StateStore.openForWriting(path: path)
            #expect(try reopened.activities(now: t0 + .seconds(120)) == before)
            #expect(before.map(\.id) == ["a", "b"])
            #expect(before.map(\.state) == [.stale, .ended])
            #expect(before[0].alert == .init(title: "Order 42", body: "On its way", sound: "chime"))
            // The CLI's read-only connection sees the same.
            let reader = try #require(try StateStore.openForReading(path: path))
            #expect(try reader.activities(now: t0 + .seconds(120)) == before)
            // The rules carry on from the stored timestamp after the restart.
            #expect(try reopened.applyActivity(update(s0, id: "a", eta: 1), now: t0 + .seconds(3)).activity == nil)
        }
    }

    @Test func anyTextRoundTripsThroughTheTable() throws {
        try withStore { store, path in
            let content = JSONValue.object([
                ("emoji", .string("🚚 \u{1b}[31m\n\u{0}")), ("list", .array([.null, .bool(true), .double(0.25)])),
                ("nested", .object([("deep", .object([("x", .integer(-1))]))])),
            ])
            let message = LiveActivityMessage(
                token: "a~!{}", event: .start, timestamp: s0, contentState: content, attributesType: "Ünïcode",
                attributes: .object([("quote", .string("\"'\\"))]), alert: .init(title: "line\nbreak", body: ""))
            let stored = try #require(try store.applyActivity(message, now: t0).activity)
            let reopened = try StateStore.openForWriting(path: path)
            #expect(try reopened.activity(id: "a~!{}", now: t0) == stored)
            #expect(stored.contentState == content)
        }
    }

    @Test func theStateIsComputedForTheGivenClock() throws {
        try withStore { store, _ in
            try store.applyActivity(start(s0, stale: s0 + 60), now: t0)
            #expect(try store.activity(id: "order-42", now: t0 + .seconds(59))?.state == .active)
            #expect(try store.activity(id: "order-42", now: t0 + .seconds(60))?.state == .stale)
            #expect(try store.activity(id: "missing", now: t0) == nil)
        }
    }

    @Test func dismissedActivitiesAreRemovedAndLogged() throws {
        try withStore { store, _ in
            try store.applyActivity(start(s0, id: "a"), now: t0)
            try store.applyActivity(start(s0, id: "b"), now: t0)
            try store.applyActivity(start(s0, id: "c"), now: t0)
            try store.applyActivity(end(s0 + 1, id: "a", dismissal: s0 + 100), now: t0 + .seconds(1))
            try store.applyActivity(end(s0 + 1, id: "b"), now: t0 + .seconds(1))
            #expect(try store.nextActivityDeadline() == t0 + .seconds(100))
            #expect(try store.expireActivities(now: t0 + .seconds(99)) == .init())
            #expect(try store.expireActivities(now: t0 + .seconds(100)) == .init(removed: ["a"]))
            #expect(try store.activities(now: t0 + .seconds(100)).map(\.id) == ["b", "c"])
            let fourHours = t0 + .seconds(1) + .seconds(4 * 3_600)
            #expect(try store.expireActivities(now: fourHours) == .init(removed: ["b"]))
            #expect(try store.activities(now: fourHours).map(\.id) == ["c"])
            let removals = try store.events().filter { $0.kind == "activity-removed" }
            #expect(removals.map { $0.detail["id"] } == [.string("a"), .string("b")])
            #expect(removals.map { $0.detail["reason"] } == [.string("dismissed"), .string("dismissed")])
            #expect(removals[0].detail["activity"]?["state"] == .string("ended"))
        }
    }

    @Test func aPastDismissalDateRemovesAtOnce() throws {
        try withStore { store, _ in
            try store.applyActivity(start(s0), now: t0)
            let outcome = try store.applyActivity(end(s0 + 1, dismissal: s0), now: t0 + .seconds(1))
            #expect(outcome.eventKind == .activityRemoved)
            #expect(try store.activities(now: t0 + .seconds(1)).isEmpty)
            #expect(try activityEvents(store) == ["activity-started", "activity-removed"])
            #expect(try store.lastEvent(.activityRemoved)?.detail["reason"] == .string("dismissal-date passed"))
        }
    }

    /// A removed activity is remembered with its last timestamp: a retained MQTT start, delivered
    /// again at every reconnect, or any replay not newer than that does not bring it back; a newer
    /// start does. Removal by dismissal, by a past dismissal date and by eviction alike.
    @Test func aRemovedActivityDoesNotComeBackFromAReplay() throws {
        try withStore { store, _ in
            try store.applyActivity(start(s0), now: t0)
            try store.applyActivity(end(s0 + 1, dismissal: s0), now: t0 + .seconds(1))  // removed at once
            for replay in [start(s0), start(s0 + 1), update(s0 + 1, eta: 1)] {
                guard case let .ignored(reason) = try store.applyActivity(replay, now: t0 + .seconds(2)) else {
                    Issue.record("a replay of a removed activity was not ignored")
                    continue
                }
                #expect(reason.contains("was removed"), "\(reason)")
            }
            #expect(try store.activities(now: t0 + .seconds(2)).isEmpty)
            #expect(try store.applyActivity(start(s0 + 2), now: t0 + .seconds(2)).eventKind == .activityStarted)

            // Dismissed by the daemon's deadline: remembered the same way.
            try store.applyActivity(end(s0 + 3, id: "order-42"), now: t0 + .seconds(3))
            try store.expireActivities(now: t0 + .seconds(3) + .seconds(5 * 3600))
            #expect(try store.applyActivity(start(s0 + 2), now: t0 + .seconds(6 * 3600)).activity == nil)
        }
    }

    /// The memory of removals is bounded: the oldest removals are forgotten first.
    @Test func theMemoryOfRemovalsIsBounded() throws {
        try withStore { store, _ in
            let count = StateStore.maximumRemembered + 2
            for index in 0..<count {
                let id = "gone-\(index)"
                let now = t0 + .seconds(Int64(index))
                try store.applyActivity(start(s0, id: id), now: now)
                try store.applyActivity(end(s0 + 1, id: id, dismissal: s0), now: now)
            }
            let later = t0 + .seconds(Int64(count))
            // The two oldest are forgotten (a replay starts them again); the newest is remembered.
            #expect(try store.applyActivity(start(s0, id: "gone-0"), now: later).eventKind == .activityStarted)
            #expect(try store.applyActivity(start(s0, id: "gone-1"), now: later).eventKind == .activityStarted)
            #expect(try store.applyActivity(start(s0, id: "gone-2"), now: later).activity == nil)
            #expect(try store.applyActivity(start(s0, id: "gone-\(count - 1)"), now: later).activity == nil)
        }
    }

    @Test func aNewerStartAfterAnEndReplacesTheEndedActivity() throws {
        try withStore { store, _ in
            try store.applyActivity(start(s0), now: t0)
            try store.applyActivity(end(s0 + 1), now: t0 + .seconds(1))
            #expect(try store.applyActivity(start(s0 + 2), now: t0 + .seconds(2)).eventKind == .activityStarted)
            let activity = try #require(try store.activity(id: "order-42", now: t0 + .seconds(2)))
            #expect(activity.state == .active && activity.endedAt == nil && activity.dismissAt == nil)
            // Running again: its next step is the device's own end, 8 h after this start.
            #expect(try store.nextActivityDeadline() == t0 + .seconds(2) + .seconds(8 * 3_600))
        }
    }

    @Test func aFailedTransactionLeavesNoEvent() throws {
        try withStore { store, path in
            try store.applyActivity(start(s0), now: t0)
            // Another connection holds the write lock: the apply fails whole, row and event alike.
            let other = try Database(path: path, mode: .readWrite)
            try other.execute("PRAGMA busy_timeout = 0; BEGIN IMMEDIATE")
            try store.db.execute("PRAGMA busy_timeout = 0")
            #expect(throws: StoreError.self) { try store.applyActivity(update(s0 + 1, eta: 1), now: t0) }
            try other.execute("ROLLBACK")
            #expect(try store.activity(id: "order-42", now: t0)?.timestamp == s0)
            #expect(try activityEvents(store) == ["activity-started"])
            #expect(store.takeCommittedEvents().map(\.kind) == ["activity-started"])
        }
    }

    @Test func damagedJSONInARowIsReportedAsDamage() throws {
        try withStore { store, path in
            try store.applyActivity(start(s0), now: t0)
            try Database(path: path, mode: .readWrite).execute("UPDATE activities SET content_state = '{'")
            let error = #expect(throws: StoreError.self) { try store.activities(now: t0) }
            #expect(error?.isCorruption == true)
            #expect(error?.description.hasPrefix("integrity check failed: activity order-42: content_state: ") == true)
        }
    }

    // MARK: - Migration

    @Test func aVersionOneDatabaseMigratesAndKeepsItsConfig() throws {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            // A database as the first release left it: its one migration, a device id, values.
            try makeDatabase(
                at: path, schemaVersion: 1,
                rows: """
                    INSERT INTO meta (key, value) VALUES ('device_id', 'dev-1');
                    INSERT INTO defaults (key, value) VALUES ('color', 'blue');
                    INSERT INTO active_values (key, value) VALUES ('speed', '3');
                    INSERT INTO snapshots (kind, template_version, activated_at) VALUES ('active', '7', 1);
                    INSERT INTO events (at, kind, detail) VALUES (1, 'activated', '{}');
                    """)
            // A newer CLI reading it before the daemon migrated it: no activities yet, no error.
            let early = try #require(try StateStore.openForReading(path: path))
            #expect(try early.activities(now: t0).isEmpty)
            #expect(try early.activity(id: "order-42", now: t0) == nil)
            #expect(try early.nextActivityDeadline() == nil)
            let store = try StateStore.openForWriting(path: path)
            #expect(StateStore.schemaVersion == 8)
            // Migration 4: the defaults are a rowid table, their values kept (a seek in a WITHOUT
            // ROWID table read every overflowing record it met whole); the value tables it made so
            // became value sets (migrations 6 and 7), then records (8).
            let tables = try Database(path: path, mode: .readOnly).query(
                "SELECT sql FROM sqlite_master WHERE name IN ('defaults', 'active_values', 'fetched_values')"
            ) { $0.text(0) ?? "" }
            #expect(tables.count == 1 && tables.allSatisfy { !$0.contains("WITHOUT ROWID") }, "\(tables)")
            #expect(try store.status().deviceId == "dev-1")
            #expect(try store.value(forKey: "color")?.text == "blue")
            #expect(try store.value(forKey: "speed")?.text == "3")
            #expect(try store.status().active.templateVersion == "7")
            #expect(try store.events().map(\.kind) == ["activated"])
            #expect(try store.activities(now: t0).isEmpty)
            #expect(try store.applyActivity(start(s0), now: t0).eventKind == .activityStarted)
            // Reading it back with the CLI's connection: the new version, nothing lost.
            let reader = try #require(try StateStore.openForReading(path: path))
            #expect(try reader.value(forKey: "speed")?.text == "3")
            #expect(try reader.activities(now: t0).map(\.id) == ["order-42"])
        }
    }
}
