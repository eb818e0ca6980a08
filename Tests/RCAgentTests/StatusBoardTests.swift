import RCCore
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

    /// A ping marks the config stale (a write) and fetches (a write): the store's status is read
    /// once after each, by the round that needs it; everyone after reads the board. (Before the
    /// board: six reads, the template check's, the round's two, then status, the report and the
    /// next fetch one each.)
    @Test func aPingReadsTheStoreStatusOnceAfterEachOfItsWrites() async throws {
        try await withTestAgent { agent, source, _, _ in
            let loop = Task { await agent.run() }
            await settle(agent, source)
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
            let report = await agent.deviceReport(deviceId: "device", online: true)
            let status = try await agent.status()
            #expect(await agent.storeStatusReads() - before == 2)
            #expect(!board.fetching && board.nextFetch != nil)
            #expect(report.templateVersion == "2" && !report.stale.set)
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
}
