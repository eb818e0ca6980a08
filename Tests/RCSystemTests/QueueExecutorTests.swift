import Dispatch
import Testing

@testable import RCSystem

/// An actor on a ``QueueExecutor``, and a task that prefers the same queue as its executor
/// (``QueueExecutor/taskExecutor``): the actor's jobs and what its task awaits outside it all run
/// on that one queue.
@Suite struct QueueExecutorTests {
    static let key = DispatchSpecificKey<String>()

    actor Owner {
        let executor: QueueExecutor
        nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

        init(label: String) {
            executor = QueueExecutor(label: label)
            executor.queue.setSpecific(key: QueueExecutorTests.key, value: label)
        }

        /// The queue this actor's code runs on, then the one a nonisolated function it awaits runs
        /// on, then the one a continuation resumed by another thread comes back to.
        func queues() async -> [String?] {
            let own = DispatchQueue.getSpecific(key: QueueExecutorTests.key)
            let outside = await QueueExecutorTests.nonisolatedQueue()
            let resumed = await QueueExecutorTests.resumedByAnotherThread()
            return [own, outside, resumed]
        }
    }

    static func nonisolatedQueue() async -> String? { DispatchQueue.getSpecific(key: key) }

    static func resumedByAnotherThread() async -> String? {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume() }
        }
        return DispatchQueue.getSpecific(key: key)
    }

    @Test func aTaskPreferringTheQueueRunsWhatItAwaitsOutsideTheActorThere() async {
        let owner = Owner(label: "test.owner")
        let preferred = await withTaskExecutorPreference(owner.executor.taskExecutor) { await owner.queues() }
        #expect(preferred == ["test.owner", "test.owner", "test.owner"])
        // Without the preference, the same calls leave the queue: the cooperative pool runs them.
        let plain = await owner.queues()
        #expect(plain == ["test.owner", nil, nil])
    }
}
