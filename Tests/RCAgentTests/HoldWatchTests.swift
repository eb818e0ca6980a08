import Glibc
import RCCore
import RCSystem
import Synchronization
import TestSupport
import Testing

@testable import RCAgent

/// The daemon's view of holds, with real processes taking the lock as `rcagent hold` does
/// (`flock(1)` from util-linux, shared): held while they run, judged by `HoldLimit=`, and a call when
/// the last one lets go, not before.
///
/// Time-limited so that a hang fails rather than blocks CI; the limit is long because under the whole
/// suite the synchronous end-to-end tests can hold every cooperative-pool thread for minutes, and a
/// test's clock runs while it waits for one (one of these passed in 8 s alone and ran past 2 minutes there).
@Suite(.timeLimit(.minutes(10))) struct HoldWatchTests {
    /// `flock -s LOCK sh -c 'touch MARKER; read x'`: holds until its stdin ends.
    private func holder(_ lock: String, _ marker: String) throws -> Subprocess {
        try Subprocess("/usr/bin/flock", ["-s", lock, "sh", "-c", "touch \(marker); read x"], input: true)
    }

    @Test
    func theWatchSaysHeldWhileHoldsRunAndCallsWhenTheLastLetsGo() async throws {
        try await TemporaryDirectory.with { directory in
            let path = directory.file("hold.lock")
            let releases = Mutex(0)
            let watch = try HoldWatch(path: path) { releases.withLock { $0 += 1 } }
            defer { watch.stop() }
            let policy = HoldPolicy(limit: .seconds(3600))
            #expect(watch.verdict(policy, at: .now()) == .free)

            let first = try holder(path, directory.file("first"))
            let second = try holder(path, directory.file("second"))
            #expect(
                await eventually(.seconds(60)) {
                    pathExists(directory.file("first")) && pathExists(directory.file("second"))
                })
            #expect(await eventually(.seconds(60)) { watch.lock.holders().count == 2 })
            guard case let .held(until) = watch.verdict(policy, at: .now()) else {
                Issue.record("not held: \(watch.verdict(policy, at: .now()))")
                return
            }
            #expect(until != nil)
            // Past the limit, the same holds are forgotten ones.
            let later = Timestamp.now() + .seconds(7200)
            guard case let .expired(holds) = watch.verdict(policy, at: later) else {
                Issue.record("not expired")
                return
            }
            #expect(Set(holds.map(\.pid)) == [first.pid, second.pid])

            first.closeInput()
            _ = first.finish()
            #expect(watch.verdict(policy, at: .now()) != .free)
            #expect(releases.withLock { $0 } == 0)
            second.closeInput()
            _ = second.finish()
            #expect(await eventually(.seconds(60)) { releases.withLock { $0 } >= 1 })
            #expect(watch.verdict(policy, at: .now()) == .free)
        }
    }
}
