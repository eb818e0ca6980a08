import RCService
import Synchronization
import Testing

/// RCService's rate-limited log of refused input: one line at once, then one per interval with the
/// count of those not logged, per kind; nothing counted is lost.
@Suite struct RefusalLogTests {
    final class Fixture: Sendable {
        let lines = Mutex<[String]>([])
        let clock = Mutex(ContinuousClock.now)
        let pending = Mutex<[@Sendable () -> Void]>([])

        func make() -> RefusalLog {
            RefusalLog(
                Logger(sink: { line in self.lines.withLock { $0.append(line) } }), interval: .seconds(60),
                now: { self.clock.withLock { $0 } },
                schedule: { _, work in self.pending.withLock { $0.append(work) } })
        }

        func advance(_ duration: Duration) { clock.withLock { $0 += duration } }

        /// Runs what the log scheduled, as the timer would at the end of the interval.
        func fire() {
            let work = pending.withLock { pending in
                defer { pending = [] }
                return pending
            }
            for item in work { item() }
        }
    }

    @Test func aFloodIsOneLineThenOneCountedLinePerInterval() {
        let fixture = Fixture()
        let log = fixture.make()
        for index in 1...1_000 { log.refused("oversized", "Ignoring message \(index)") }
        log.refused("unreadable", "Ignoring garbage")
        #expect(fixture.lines.withLock { $0 } == ["<4>Ignoring message 1\n", "<4>Ignoring garbage\n"])
        #expect(fixture.pending.withLock { $0.count } == 1, "one flush scheduled for the suppressed ones")
        fixture.advance(.seconds(60))
        fixture.fire()
        #expect(
            fixture.lines.withLock { $0.last }
                == "<4>Ignoring message 1000 (999 like it since the last such line, the last one shown)\n")
        // Right after the flush, more are counted again, not logged.
        log.refused("oversized", "Ignoring message 1001")
        #expect(fixture.lines.withLock { $0.count } == 3)
        fixture.advance(.seconds(61))
        fixture.fire()
        #expect(fixture.lines.withLock { $0.last }?.hasPrefix("<4>Ignoring message 1001 (1 like it") == true)
        // A quiet interval later, the next one is logged at once.
        fixture.advance(.seconds(61))
        log.refused("oversized", "Ignoring message 1002")
        #expect(fixture.lines.withLock { $0.last } == "<4>Ignoring message 1002\n")
    }
}
