import RCCore
import RCStore
import TestSupport
import Testing

@testable import RCAgent

/// Bugs a review of the reload work found in the agent, each shown by the test that failed before
/// its fix (see the commit that added it).
@Suite struct ReviewFindingsTests {
    /// REVIEW FINDING 1 (failed until the fix: a reload that moved the timer did not wake the loop).
    /// The fetch loop waits for its earliest deadline; a reload that brings the periodic fetch
    /// closer (a shorter MinimumFetchInterval) re-armed the timer without waking that wait, so the
    /// fetch came only when the loop woke for something else (the 10 s settle, or hours later).
    @Test func aReloadThatBringsTheTimerCloserWakesTheWaitingLoop() async throws {
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
            let started = await source.started.next(until: .now + .seconds(60))
            #expect(started != nil, "the loop slept through the reload that brought the timer near")
            source.release.send(())
            loop.cancel()
            await loop.value
        }
    }
}
