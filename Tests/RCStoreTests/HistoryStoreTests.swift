import RCCore
import TestSupport
import Testing

@testable import RCStore

/// Safe activation's durable state in a real SQLite file: history with outcomes, trials that commit
/// or roll back (also after the store is closed mid-trial, as a kill would), rejected versions that
/// never come back, `rollback`, and the rule that a change is a change of the value `get` returns.
@Suite struct HistoryStoreTests {
    private let t0 = Timestamp(milliseconds: 1_700_000_000_000)

    private func at(_ seconds: Int64) -> Timestamp { Timestamp(milliseconds: t0.milliseconds + seconds * 1_000) }

    private func withStore<T>(_ body: (StateStore, String) throws -> T) throws -> T {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            return try body(try StateStore.openForWriting(path: path), path)
        }
    }

    private func fetch(_ store: StateStore, _ version: String, _ values: [String: String], at time: Timestamp) throws {
        try store.recordFetch(
            .update(values: RemoteValues(values), templateVersion: version, etag: nil), at: time, activate: false)
    }

    private func value(_ store: StateStore, _ key: String) throws -> String? {
        try store.value(forKey: key)?.text
    }

    @Test func historyKeepsTheNewestActivationsWithTheirOutcomeNewestFirst() throws {
        try withStore { store, _ in
            for version in 1...4 {
                try fetch(store, "\(version)", ["url": "v\(version)"], at: at(Int64(version)))
                try #require(try store.activateRecorded(at: at(Int64(version)), keep: 3) != nil)
            }
            let history = try store.history()
            #expect(history.map(\.templateVersion) == ["4", "3", "2"])
            #expect(history.map(\.outcome) == [.active, .superseded, .superseded])
            #expect(history.first?.changedKeys == 1)
            #expect(history.first?.activatedAt == at(4))
        }
    }

    @Test func aFailedTrialPutsThePreviousValuesBackAndRejectsItsVersionForGood() throws {
        try withStore { store, _ in
            try fetch(store, "1", ["url": "good", "title": "Shop"], at: at(1))
            try store.activateRecorded(at: at(1), keep: 20)
            try fetch(store, "2", ["url": "bad", "title": "Shop"], at: at(2))
            let trial = try #require(try store.activateRecorded(at: at(2), keep: 20, trialDeadline: at(62)))
            #expect(trial.changedKeys == ["url"])
            #expect(try value(store, "url") == "bad")
            #expect(try store.pendingTrial()?.templateVersion == "2")
            #expect(try store.pendingTrial()?.deadline == at(62))
            _ = store.takeCommittedEvents()

            let back = try #require(try store.rollBackTrial(.healthCheckFailed(exitCode: 3), at: at(5)))
            #expect(back.changedKeys == ["url"])
            #expect(back.templateVersion == "1")
            #expect(back.changes?.first == KeyChange(key: "url", old: "bad", new: "good", source: .remote))
            #expect(try value(store, "url") == "good")
            #expect(try store.pendingTrial() == nil)
            #expect(try store.rejectedVersions().map(\.templateVersion) == ["2"])
            #expect(try store.isRejected("2"))
            #expect(try store.history().map(\.outcome) == [.rolledBack(.healthCheckFailed(exitCode: 3)), .active])
            #expect(try store.history().first?.outcome.description == "rolled-back: health check failed (exit 3)")
            let events = store.takeCommittedEvents()
            #expect(events.map(\.kind) == ["rolled-back"])
            #expect(try store.status().active.templateVersion == "1")

            // Fetched again (the server still serves it): never activated again.
            try fetch(store, "2", ["url": "bad"], at: at(10))
            #expect(try store.activateRecorded(at: at(10), keep: 20) == nil)
            #expect(try value(store, "url") == "good")
            // A newer version is tried as usual.
            try fetch(store, "3", ["url": "fixed"], at: at(20))
            #expect(try store.activateRecorded(at: at(20), keep: 20)?.templateVersion == "3")
            #expect(try value(store, "url") == "fixed")
        }
    }

    @Test func aPassedTrialIsCommitted() throws {
        try withStore { store, _ in
            try fetch(store, "1", ["url": "a"], at: at(1))
            try store.activateRecorded(at: at(1), keep: 20, trialDeadline: at(61))
            try store.commitTrial(at: at(2))
            #expect(try store.pendingTrial() == nil)
            #expect(try store.history().map(\.outcome) == [.active])
            #expect(try store.rejectedVersions().isEmpty)
        }
    }

    @Test func aTrialFoundPendingAfterTheStoreWasClosedRollsBackAsInterrupted() throws {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            do {
                let store = try StateStore.openForWriting(path: path)
                try fetch(store, "1", ["url": "good"], at: at(1))
                try store.activateRecorded(at: at(1), keep: 20)
                try fetch(store, "2", ["url": "bad"], at: at(2))
                try store.activateRecorded(at: at(2), keep: 20, trialDeadline: at(62))
            }
            let reopened = try StateStore.openForWriting(path: path)
            let pending = try #require(try reopened.pendingTrial())
            #expect(ActivationTrial.resume(pendingFound: true) == .rollBack(.interrupted))
            #expect(pending.templateVersion == "2")
            try reopened.rollBackTrial(.interrupted, at: at(100))
            #expect(try reopened.value(forKey: "url")?.text == "good")
            #expect(try reopened.history().first?.outcome == .rolledBack(.interrupted))
            #expect(try reopened.rejectedVersions().first?.reason == "interrupted")
        }
    }

    @Test func aTrialOnTheFirstActivationRollsBackToNoRemoteValues() throws {
        try withStore { store, _ in
            try store.replaceDefaults(["url": "default"])
            try fetch(store, "1", ["url": "bad"], at: at(1))
            try store.activateRecorded(at: at(1), keep: 20, trialDeadline: at(61))
            let back = try #require(try store.rollBackTrial(.timedOut, at: at(61)))
            #expect(back.templateVersion == nil)
            #expect(try value(store, "url") == "default")
            #expect(try store.status().active.templateVersion == nil)
        }
    }

    @Test func valuesActivatedBeforeHistoryWasKeptAreWhatAFirstTrialRollsBackTo() throws {
        try withStore { store, _ in
            try store.recordFetch(
                .update(values: ["url": "old"], templateVersion: "7", etag: nil), at: at(1), activate: true)
            try fetch(store, "8", ["url": "new"], at: at(2))
            try store.activateRecorded(at: at(2), keep: 1, trialDeadline: at(62))
            #expect(try store.history().map(\.templateVersion) == ["8", "7"])
            try store.rollBackTrial(.timedOut, at: at(3))
            #expect(try value(store, "url") == "old")
            #expect(try store.history().map(\.source) == ["fetch", "baseline"])
        }
    }

    @Test func rollbackGoesBackToTheNewestOlderSnapshotAndRejectsWhatCameAfter() throws {
        try withStore { store, _ in
            for version in 1...3 {
                try fetch(store, "\(version)", ["url": "v\(version)"], at: at(Int64(version)))
                try store.activateRecorded(at: at(Int64(version)), keep: 20)
            }
            let result = try store.rollback(at: at(10))
            #expect(try result.get().changedKeys == ["url"])
            #expect(try value(store, "url") == "v2")
            #expect(try store.rejectedVersions().map(\.templateVersion) == ["3"])
            #expect(try store.history().map(\.outcome) == [.rolledBack(.byRollback), .active, .superseded])

            // To a named version: everything after it is rejected.
            #expect(try store.rollback(to: "1", at: at(11)).get().templateVersion == "1")
            #expect(try value(store, "url") == "v1")
            #expect(Set(try store.rejectedVersions().map(\.templateVersion)) == ["2", "3"])
            #expect(try store.rollback(at: at(12)) == .failure(.nothingToRollBackTo))
            #expect(try store.rollback(to: "3", at: at(12)) == .failure(.rejected("3")))
            #expect(try store.rollback(to: "1", at: at(12)) == .failure(.alreadyActive("1")))
            #expect(try store.rollback(to: "9", at: at(12)) == .failure(.notKept("9")))
        }
    }

    @Test func aRollbackWaitsForTheTrialUnderWay() throws {
        try withStore { store, _ in
            try fetch(store, "1", ["url": "a"], at: at(1))
            try store.activateRecorded(at: at(1), keep: 20)
            try fetch(store, "2", ["url": "b"], at: at(2))
            try store.activateRecorded(at: at(2), keep: 20, trialDeadline: at(62))
            #expect(try store.rollback(at: at(3)) == .failure(.trialPending("2")))
            // And so does the next activation: the trial decides first.
            try fetch(store, "3", ["url": "c"], at: at(4))
            #expect(try store.activateRecorded(at: at(4), keep: 20) == nil)
            #expect(try store.status().pending)
        }
    }

    /// Issue item: the kiosk restarted for nothing when a key's value stayed while it moved from the
    /// template to the defaults file (or back).
    @Test func aKeyWhoseValueStaysWhileItsSourceMovesIsNotAChange() throws {
        try withStore { store, _ in
            try store.replaceDefaults(["url": "https://shop", "title": "Shop"])
            let first = try store.recordFetch(
                .update(values: ["url": "https://shop", "color": "red"], templateVersion: "1", etag: nil), at: at(1),
                activate: true, withValues: true)
            // `url` moved from default to remote with the same value; `color` is new.
            #expect(first?.changedKeys == ["color"])
            let second = try store.recordFetch(
                .update(values: ["title": "Shop", "color": "blue"], templateVersion: "2", etag: nil), at: at(2),
                activate: true, withValues: true)
            // `url` back to its default (same value), `title` remote with its default's value: no change.
            #expect(second?.changedKeys == ["color"])
            #expect(second?.changes == [KeyChange(key: "color", old: "red", new: "blue", source: .remote)])
            let third = try store.recordFetch(
                .update(values: [:], templateVersion: "3", etag: nil), at: at(3), activate: true)
            #expect(third?.changedKeys == ["color"])
        }
    }

    @Test func theReaderFileCarriesHistoryAndRejectedVersions() throws {
        try withStore { store, path in
            try fetch(store, "1", ["url": "a"], at: at(1))
            try store.activateRecorded(at: at(1), keep: 20)
            try fetch(store, "2", ["url": "b"], at: at(2))
            try store.activateRecorded(at: at(2), keep: 20, trialDeadline: at(62))
            try store.rollBackTrial(.timedOut, at: at(3))
            let reader = path + ".reader"
            try store.writeReaderFile(to: reader)
            let copy = try #require(try StateStore.openReaderFile(path: reader))
            #expect(try copy.history().map(\.templateVersion) == ["2", "1"])
            #expect(try copy.rejectedVersions().map(\.templateVersion) == ["2"])
        }
    }

    /// The daemon's path: a fetch recorded with its activation and trial in one transaction; the same
    /// version fetched again after its rollback is dropped, a newer one activates.
    @Test func aFetchActivatedWithARecordingStartsATrialAndARejectedVersionFetchedAgainIsDropped() throws {
        try withStore { store, _ in
            func fetchActivating(_ version: String, _ url: String, at time: Timestamp) throws -> Activation? {
                try store.recordFetch(
                    .update(values: ["url": url], templateVersion: version, etag: nil), at: time, activate: true,
                    recording: ActivationRecording(keep: 5, trialDeadline: time + .seconds(60)))
            }
            #expect(try fetchActivating("1", "a", at: at(1))?.changedKeys == ["url"])
            try store.commitTrial(at: at(2))
            #expect(try fetchActivating("2", "b", at: at(3))?.changedKeys == ["url"])
            #expect(try store.pendingTrial()?.templateVersion == "2")
            #expect(try fetchActivating("3", "c", at: at(4)) == nil, "the trial under way decides first")
            #expect(try value(store, "url") == "b")
            try store.rollBackTrial(.healthCheckFailed(exitCode: 1), at: at(5))
            #expect(try value(store, "url") == "a")
            #expect(try fetchActivating("2", "b", at: at(6)) == nil)
            #expect(try value(store, "url") == "a")
            #expect(try store.status().pending == false, "the rejected snapshot no longer waits")
            #expect(try fetchActivating("3", "c", at: at(7))?.templateVersion == "3")
            #expect(try store.activationStatus().trial?.templateVersion == "3")
            #expect(try store.activationStatus().rejected == ["2"])
            #expect(try store.activationStatus().lastRollback?.reason == "health check failed (exit 1)")
        }
    }
}
