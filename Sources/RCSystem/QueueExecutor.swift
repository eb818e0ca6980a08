@preconcurrency import Dispatch

/// A serial executor on its own dispatch queue, for an actor whose work blocks: the agent (SQLite
/// commits fsync) and the Firebase installation client (it writes its credentials file with
/// fsync). Blocking work must stay off the cooperative pool, which has two threads here.
public final class QueueExecutor: SerialExecutor, @unchecked Sendable {
    let queue: DispatchQueue

    public init(label: String) {
        queue = DispatchQueue(label: label)
        taskExecutor = QueueTaskExecutor(queue: queue)
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// The same queue as a task's executor (`withTaskExecutorPreference`): what the task awaits
    /// outside the actor (a nonisolated function, a continuation resumed by another thread) runs
    /// on the queue too, one job at a time with the actor's. Without it, each such resumption woke
    /// a thread of the cooperative pool, which then woke the queue's (BENCHMARKS.md, issue 30).
    public let taskExecutor: QueueTaskExecutor
}

/// A task executor on a ``QueueExecutor``'s queue (``QueueExecutor/taskExecutor``).
public final class QueueTaskExecutor: TaskExecutor, @unchecked Sendable {
    let queue: DispatchQueue

    init(queue: DispatchQueue) { self.queue = queue }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
