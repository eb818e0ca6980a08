@preconcurrency import Dispatch

/// A serial executor on its own dispatch queue, for an actor whose work blocks: the agent (SQLite
/// commits fsync) and the Firebase installation client (it writes its credentials file with
/// fsync). Blocking work must stay off the cooperative pool, which has two threads here.
public final class QueueExecutor: SerialExecutor, @unchecked Sendable {
    let queue: DispatchQueue

    public init(label: String) {
        queue = DispatchQueue(label: label)
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }
}
