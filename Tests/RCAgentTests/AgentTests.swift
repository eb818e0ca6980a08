import RCCore
import RCService
import RCStore
import RCSystem
import Synchronization
import TestSupport
import Testing

@testable import RCAgent

/// A source that tells when a fetch starts and holds it until the test lets it go.
final class FakeSource: ConfigSource {
    let name: String
    /// Every fetch asked for, with the ETag and trigger it got.
    let calls = Mutex<[(etag: String?, trigger: FetchTrigger)]>([])
    /// One element per fetch that has started.
    let started = Inbox<Void>()
    /// One element lets one held fetch finish.
    let release = Inbox<Void>()

    init(name: String) { self.name = name }

    func fetch(etag: String?, trigger: FetchTrigger) async throws(SourceError) -> SourceResult {
        let count = calls.withLock { calls in
            calls.append((etag, trigger))
            return calls.count
        }
        started.send(())
        _ = await release.next()
        return .document(
            .update(values: ["k": "\(name)-\(count)"], templateVersion: "\(count)"), etag: "\(name)-\(count)")
    }
}

/// Runs `body` with an agent on a fresh database (what `prepare` stored in it first) and a fake
/// source; `body` reads what was stored through a reader of its own, as `rcagent` does, and gets
/// the agent's config.
func withTestAgent(
    settleDelay: Duration = .seconds(10), prepare: (StateStore) throws -> Void = { _ in },
    _ body: (Agent, FakeSource, _ read: () throws -> StateStore, AgentConfig) async throws -> Void
) async throws {
    try await TemporaryDirectory.with { directory in
        var config = AgentConfig()
        config.stateDirectory = directory.path
        config.defaults = directory.file("none.json")
        config.hooksDirectory = directory.file("hooks.d")
        let store = try StateStore.open(config: config)
        try prepare(store)
        let source = FakeSource(name: "one")
        let agent = try Agent(
            config: config, store: store, source: source, log: Logger { _ in }, notifier: SystemdNotifier(),
            settleDelay: settleDelay)
        let path = config.databasePath
        try await body(agent, source, { try #require(try StateStore.openForReading(path: path)) }, config)
    }
}

/// The agent's fetch loop with a real state database and a fake source: coalescing, reload, stop.
/// Time-limited: its async tests wait on gates, continuations or peers, and a hang must fail, not block CI.
@Suite(.timeLimit(.minutes(10))) struct AgentTests {
    @Test func requestsThatArriveDuringAFetchShareTheNextRound() async throws {
        try await withTestAgent { agent, source, store, _ in
            let loop = Task { await agent.run() }
            _ = await source.started.next()  // the start-up round is fetching
            let replies = Inbox<FetchOutcome>()
            for _ in 0..<3 { agent.request(.manual(force: true, ignoreThrottle: false)) { replies.send($0) } }
            source.release.send(())
            _ = await source.started.next()  // one more round, for all three
            source.release.send(())
            for _ in 0..<3 {
                guard case .updated(_, "2", _)? = await replies.next() else {
                    Issue.record("each request hears the second round's outcome")
                    return
                }
            }
            #expect(source.calls.withLock { $0.count } == 2)
            let value = try store().value(forKey: "k")?.text
            #expect(value == "one-2")
            loop.cancel()
            await loop.value
        }
    }

    @Test func aReloadedSourceIsAskedAtOnceWithoutTheOldETag() async throws {
        try await withTestAgent { agent, source, store, _ in
            let loop = Task { await agent.run() }
            _ = await source.started.next()
            source.release.send(())
            let settled = Inbox<FetchOutcome>()
            // Queued behind the start-up round: its answer means the round is stored.
            agent.request(.timer) { settled.send($0) }
            _ = await settled.next()
            let etag = try store().status().fetched.etag
            #expect(etag == "one-1")

            let other = FakeSource(name: "two")
            var config = await agent.config
            config.sourcePath = "/elsewhere"
            await agent.reconfigure(config, source: other)
            _ = await other.started.next()
            let call = other.calls.withLock { $0[0] }
            #expect(call.etag == nil)
            #expect(call.trigger == .reload(newSource: true))
            other.release.send(())
            agent.request(.timer) { settled.send($0) }
            _ = await settled.next()
            let value = try store().value(forKey: "k")?.text
            #expect(value == "two-1")
            loop.cancel()
            await loop.value
        }
    }

    @Test func stoppingAnswersWhatStillWaitsWithCancelled() async throws {
        try await withTestAgent { agent, source, _, _ in
            let loop = Task { await agent.run() }
            _ = await source.started.next()
            let replies = Inbox<FetchOutcome>()
            agent.request(.push) { replies.send($0) }
            loop.cancel()
            source.release.send(())
            await loop.value
            guard case .cancelled? = await replies.next() else {
                Issue.record("the waiting request is told the daemon stops")
                return
            }
            // And a request after the stop is answered at once.
            agent.request(.push) { replies.send($0) }
            guard case .cancelled? = await replies.next() else {
                Issue.record("a late request is refused")
                return
            }
        }
    }
}

/// The fetch loop across a reload.
extension AgentTests {
    /// Regression (failed until the fix: a reload that moved the timer did not wake the loop).
    /// The fetch loop waits for its earliest deadline; a reload that brings the periodic fetch
    /// closer (a shorter MinimumFetchInterval) re-armed the timer without waking that wait, so the
    /// fetch came only when the loop woke for something else (the 10 s settle, or hours later).
    @Test(.timeLimit(.minutes(5)))
    func aReloadThatBringsTheTimerCloserWakesTheWaitingLoop() async throws {
        // No settle deadline to wake the loop by chance: only the reload can bring the fetch near.
        try await withTestAgent(settleDelay: .seconds(3_600)) { store in
            // Fetched three hours ago: with the built-in 12 h interval nothing is due for 9 h.
            let threeHoursAgo = Timestamp(milliseconds: Timestamp.now().milliseconds - 3 * 3_600_000)
            try store.recordFetch(
                .update(values: ["k": "old"], templateVersion: "1", etag: "e1"), at: threeHoursAgo, activate: true)
        } _: { agent, source, _, config in
            let loop = Task { await agent.run() }
            // The start-up round is skipped (not due); this request is answered after it.
            let settled = Inbox<FetchOutcome>()
            agent.request(.timer) { settled.send($0) }
            guard case .skipped? = await settled.next() else {
                Issue.record("the start-up round should be skipped: the last fetch is recent")
                loop.cancel()
                await loop.value
                return
            }
            #expect(source.calls.withLock { $0.count } == 0)

            // A reload to a 1 h interval: the fetch three hours ago is past it, the timer comes due
            // within a second (its floor).
            var shorter = config
            shorter.minimumFetchInterval = .seconds(3_600)
            await agent.reconfigure(shorter, source: nil)
            let next = await agent.nextFetch
            #expect(next.map { $0.milliseconds <= Timestamp.now().milliseconds } == true, "status says due now")
            // Woken by the reload, the loop fetches a second after it; left asleep, not for an hour
            // (the settle delay) or nine (the old timer). The minute is a bound for a loaded
            // machine, not a measurement.
            let started: Void? = await source.started.next(until: .now + .seconds(60))
            #expect(started != nil, "the loop slept through the reload that brought the timer near")
            source.release.send(())
            loop.cancel()
            await loop.value
        }
    }
}
