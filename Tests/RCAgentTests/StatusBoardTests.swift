import RCCore
import RCService
import RCStore
import RCSystem
import TestSupport
import Testing

@testable import RCAgent

extension Agent {
    /// How many times the agent's store ran `status()` so far.
    fileprivate func storeStatusReads() -> Int { writer.store.statusReads }
}

/// The agent's status board: readers (socket status, the device report, the `STATUS=` line) take
/// the store status the agent read after its last write, on a real database; a write of another
/// process is seen all the same.
/// Time-limited: its async tests wait on gates, continuations or peers, and a hang must fail, not block CI.
@Suite(.timeLimit(.minutes(10))) struct StatusBoardTests {
    /// Runs the start-up round and waits until it is stored.
    private func settle(_ agent: Agent, _ source: FakeSource) async {
        _ = await source.started.next()
        source.release.send(())
        let settled = Inbox<FetchOutcome>()
        // Queued behind the start-up round (and skipped: the fetch is recent): its answer means it is stored.
        agent.request(.timer) { settled.send($0) }
        _ = await settled.next()
    }

    /// A ping marks the config stale (a write) and fetches (a write): the stale flag moves the
    /// board without a read (the writer knows what it changed), the fetch's record is read once,
    /// by the snapshot pushed to the subscriber, and the round, `status` and the report take that.
    /// (Before the board: six reads, the template check's, the round's two, then status, the
    /// report and the next fetch one each; before the pushed snapshot and the stale flag's move:
    /// two.)
    @Test func aPingReadsTheStoreStatusOnce() async throws {
        try await withTestAgent { agent, source, _, _ in
            let loop = Task { await agent.run() }
            await settle(agent, source)
            let snapshots = Inbox<StatusSnapshot>()
            let subscription = await agent.subscribeStatus { snapshots.send($0) }
            _ = await snapshots.next()  // the status now, at once
            let before = await agent.storeStatusReads()
            let ping = Task {
                // Announcing a template: the agent compares it with its own first (from the board).
                try await agent.handle(
                    PushMessage(data: ["CONFIG_STATE": "STALE", "templateVersion": "5"]), from: "socket", wait: true)
            }
            _ = await source.started.next()
            source.release.send(())
            _ = try await ping.value
            let board = await agent.statusBoard()
            var report: DeviceReport?
            while let snapshot = snapshots.poll() { report = snapshot.device }
            let status = try await agent.status()
            #expect(await agent.storeStatusReads() - before == 1)
            await agent.unsubscribeStatus(subscription)
            #expect(!board.fetching && board.nextFetch != nil)
            #expect(report?.templateVersion == "2" && report?.stale.set == false)
            #expect(status.fetched.templateVersion == "2" && status.active.templateVersion == "2")
            loop.cancel()
            await loop.value
        }
    }

    @Test func aWriteOfAnotherProcessIsSeen() async throws {
        try await withTestAgent { agent, source, _, config in
            let loop = Task { await agent.run() }
            await settle(agent, source)
            #expect(try await !agent.status().stale.isSet)
            let before = await agent.storeStatusReads()
            _ = try await agent.status()
            #expect(await agent.storeStatusReads() == before)  // nothing changed: the board's
            // `rcagent mark-stale` beside a daemon that did not answer writes the file itself.
            let other = try StateStore.openForWriting(path: config.databasePath)
            try other.markStale(reason: "beside the daemon", at: .now())
            let status = try await agent.status()
            #expect(status.stale.isSet && status.stale.reason == "beside the daemon")
            #expect(await agent.storeStatusReads() == before + 1)
            loop.cancel()
            await loop.value
        }
    }

    /// A state writer on a new database in `directory`, with no hooks and a silent log.
    static func writer(in directory: TemporaryDirectory) throws -> (AgentConfig, StateStore, StateWriter) {
        var config = AgentConfig()
        config.stateDirectory = directory.path
        let store = try StateStore.open(config: config)
        let log = Logger { _ in }
        let writer = StateWriter(
            store: store, hooks: HookRunner(directory: directory.file("hooks"), timeout: .seconds(5), log: log),
            config: config, log: log)
        return (config, store, writer)
    }

    /// A subscriber is pushed the snapshot at once, then after every write (the stale flag's
    /// with the flag set and no read of the store), until it stops.
    @Test func aSubscriberIsPushedTheStatusAtOnceAndAfterEveryWriteUntilItStops() throws {
        try TemporaryDirectory.with { directory in
            let (_, store, writer) = try Self.writer(in: directory)
            let snapshots = Inbox<StatusSnapshot>()
            let id = writer.subscribe { snapshots.send($0) }
            let first = try #require(snapshots.poll())
            #expect(first.store?.stale.isSet == false && !first.device.stale.set)
            let reads = store.statusReads
            #expect(try writer.markStale(reason: "ping", at: .now()))
            let stale = try #require(snapshots.poll())
            #expect(stale.store?.stale.isSet == true && stale.store?.stale.reason == "ping" && stale.device.stale.set)
            #expect(store.statusReads == reads, "the flag's change moved the board")
            #expect(try writer.status().stale.isSet && store.statusReads == reads)
            writer.unsubscribe(id)
            try writer.recordFetch(.noChange, at: .now(), activate: false)
            #expect(snapshots.poll() == nil)
        }
    }

    /// The stale flag moves the board only when the board was the store's right before the write:
    /// another process's commit in between (`rcagent mark-stale` beside the daemon, here a fetch
    /// record) makes the next look read the store again, and the snapshot carries both changes.
    @Test func anotherProcessWritingBeforeTheStaleFlagMakesTheBoardReadAgain() throws {
        try TemporaryDirectory.with { directory in
            let (config, store, writer) = try Self.writer(in: directory)
            let snapshots = Inbox<StatusSnapshot>()
            _ = writer.subscribe { snapshots.send($0) }
            #expect(try #require(snapshots.poll()).store?.lastAttempt == nil)
            let other = try StateStore.openForWriting(path: config.databasePath)
            try other.recordFetch(.noChange, at: Timestamp(milliseconds: 5_000), activate: false)
            let reads = store.statusReads
            #expect(try writer.markStale(reason: "ping", at: .now()))
            let snapshot = try #require(snapshots.poll())
            #expect(store.statusReads == reads + 1, "read again: the kept status was not the store's")
            #expect(snapshot.store?.stale.isSet == true)
            #expect(snapshot.store?.lastAttempt == Timestamp(milliseconds: 5_000))
        }
    }
}
