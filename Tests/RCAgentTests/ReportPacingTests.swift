import RCCore
import Testing

@testable import RCAgent

/// ``ReportPacing`` driven with made-up instants: a settle after the first change, at most one
/// report per interval, a burst costs one report per interval and the state of the last change
/// always goes out.
@Suite struct ReportPacingTests {
    let t0 = ContinuousClock.now

    func at(_ milliseconds: Int) -> ContinuousClock.Instant { t0 + .milliseconds(milliseconds) }

    @Test func aChangeIsDueAfterTheSettle() {
        var pacing = ReportPacing()
        #expect(pacing.due == nil)
        #expect(!pacing.isDue(at: at(10_000)))
        pacing.changed(at: at(0))
        #expect(pacing.due == at(250))
        #expect(!pacing.isDue(at: at(249)))
        #expect(pacing.isDue(at: at(250)))
        // More changes within the settle join it: the deadline does not move on.
        pacing.changed(at: at(100))
        pacing.changed(at: at(240))
        #expect(pacing.due == at(250))
        pacing.published(at: at(250))
        #expect(pacing.due == nil)
    }

    @Test func reportsAreAtLeastAnIntervalApart() {
        var pacing = ReportPacing()
        pacing.changed(at: at(0))
        pacing.published(at: at(250))
        // Right after a report: the next waits for the interval, not only the settle.
        pacing.changed(at: at(300))
        #expect(pacing.due == at(1_250))
        pacing.published(at: at(1_250))
        // Long after: the settle alone.
        pacing.changed(at: at(5_000))
        #expect(pacing.due == at(5_250))
    }

    @Test func aBurstOfChangesCostsOneReportPerInterval() {
        var pacing = ReportPacing()
        var published: [Int] = []
        // A change every 10 ms for 5 s, the reporter publishing whenever the pacing says so.
        for now in stride(from: 0, through: 5_000, by: 10) {
            pacing.changed(at: at(now))
            if pacing.isDue(at: at(now)) {
                published.append(now)
                pacing.published(at: at(now))
            }
        }
        #expect(published.count <= 6, "\(published)")
        #expect(zip(published, published.dropFirst()).allSatisfy { $1 - $0 >= 1_000 }, "\(published)")
        // The changes after the last report are still due: the latest state goes out.
        #expect(pacing.due != nil)
    }

    @Test func anUnchangedReportClearsTheDeadlineWithoutDelayingTheNext() {
        var pacing = ReportPacing()
        pacing.changed(at: at(0))
        pacing.published(at: at(250))
        pacing.changed(at: at(3_000))
        pacing.unchanged()
        #expect(pacing.due == nil)
        // Nothing went out at 3,250: the interval still counts from 250.
        pacing.changed(at: at(3_300))
        #expect(pacing.due == at(3_550))
    }
}
