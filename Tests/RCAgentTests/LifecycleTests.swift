import Glibc
import RCService
import Synchronization
import Testing

/// The one lifecycle of the long-running programs: the stop's order, its deadline, and signals
/// caught from the start.
///
/// The time limits are long: under the whole suite, the synchronous end-to-end tests can hold
/// every cooperative-pool thread for minutes (these ran in milliseconds alone, in 4 minutes there).
/// Time-limited: its async tests wait on gates, continuations or peers, and a hang must fail, not block CI.
@Suite(.timeLimit(.minutes(10))) struct LifecycleTests {
    @Test func partsStopInReverseStartOrder() async {
        let stopped = Mutex<[String]>([])
        let parts = ["state", "socket", "fetch loop"].map { name in
            Lifecycle.Part(name) { stopped.withLock { $0.append(name) } }
        }
        let late = await Lifecycle.stop(parts, within: .seconds(30))
        #expect(late.isEmpty)
        #expect(stopped.withLock { $0 } == ["fetch loop", "socket", "state"])
    }

    /// A part that ends only when cancelled (like a transfer that heeds nothing else), and says so.
    static func untilCancelled(_ name: String, tell: AsyncStream<String>.Continuation) -> Lifecycle.Part {
        Lifecycle.Part(name) {
            let (never, input) = AsyncStream<Never>.makeStream()
            await withTaskCancellationHandler {
                for await _ in never {}
            } onCancel: {
                input.finish()
            }
            tell.yield(name)
        }
    }

    @Test(.timeLimit(.minutes(10))) func aPartPastTheDeadlineIsCancelledAndTheRestAreNotAwaited() async {
        let (cancelled, cancelledInput) = AsyncStream<String>.makeStream()
        let stalled = Self.untilCancelled("stalled fetch", tell: cancelledInput)
        // Stopped after the deadline, in a task cancelled from the start: it hears so whenever it runs.
        let earlier = Self.untilCancelled("socket", tell: cancelledInput)
        let late = await Lifecycle.stop([earlier, stalled], within: .milliseconds(200))
        #expect(late == ["stalled fetch", "socket"])
        var seen: Set<String> = []
        for await name in cancelled {
            seen.insert(name)
            if seen.count == 2 { break }
        }
        #expect(seen == ["stalled fetch", "socket"])
    }

    @Test(.timeLimit(.minutes(10))) func aSignalBeforeAnyoneListensIsNotLost() async throws {
        let lifecycle = try Lifecycle(signals: [SIGUSR2])
        // Sent before anything iterates the stream; without the handler it would end the process.
        raise(SIGUSR2)
        raise(SIGUSR2)
        #expect(await lifecycle.nextSignal() == SIGUSR2)
        #expect(await lifecycle.nextSignal() == SIGUSR2)
    }
}
