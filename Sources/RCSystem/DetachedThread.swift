import Glibc

/// Starts `body` on a detached OS thread of its own: for blocking work (sockets, curl transfers, the
/// MQTT network loop) that must not sit on the cooperative pool. The thread is one that finished an
/// earlier body and waits in ``ThreadPark/shared`` for the next, when one does, or a new one. In
/// RCSystem because the daemon and the network modules (RCHTTP, RCMQTT) all start such threads.
public enum DetachedThread {
    /// Whether the thread started (pthread_create can fail when threads or memory run out).
    @discardableResult
    public static func start(stackSize: Int = 512 * 1024, _ body: @escaping @Sendable () -> Void) -> Bool {
        ThreadPark.shared.start(stackSize: stackSize, body)
    }

    /// Runs the blocking `body` on a thread of its own and resumes the caller when it is done; on
    /// the caller's thread when no thread can be started (better late than never: a stop).
    public static func run(_ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let started = start {
                body()
                continuation.resume()
            }
            if !started {
                body()
                continuation.resume()
            }
        }
    }

    /// Runs the blocking `body` on a thread of its own and resumes the caller with its result,
    /// holding no cooperative-pool thread meanwhile (there are as many as cores). `noThread` is
    /// the error when no thread can be started. The one way async code calls blocking code.
    public static func run<T: Sendable, E: Error>(
        noThread: @autoclosure @escaping @Sendable () -> E, _ body: @escaping @Sendable () throws(E) -> T
    ) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            let started = start {
                do throws(E) { continuation.resume(returning: .success(try body())) } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
            if !started { continuation.resume(returning: .failure(noThread())) }
        }
        return try result.get()
    }
}

/// Runs an async operation from a plain thread and waits for its result: the one way blocking
/// code calls async code (a program's main thread, the control socket's connection threads).
/// Never from the cooperative pool, which it would hold while it waits.
package func blockingWait<T: Sendable>(_ operation: @escaping @Sendable () async -> T) -> T {
    let handoff = Handoff<T>()
    Task { handoff.put(await operation()) }
    return handoff.take()
}

extension DetachedThread {
    /// Starts the blocking `body` on a thread of its own and returns at once: the caller goes on
    /// with other work and takes `body`'s result from the hand-off when it needs it. `nil` when no
    /// thread can start.
    package static func begin<T: Sendable>(_ body: @escaping @Sendable () -> T) -> Handoff<T>? {
        let handoff = Handoff<T>()
        return start { handoff.put(body()) } ? handoff : nil
    }
}

/// A result one thread (or task) hands to another once: ``put(_:)`` by the one, ``take()`` by the
/// other, which waits for it.
package final class Handoff<T: Sendable>: @unchecked Sendable {
    // @unchecked: `value` is written before the semaphore is posted and read after it is waited for.
    private var value: T?
    private var semaphore = sem_t()

    package init() { sem_init(&semaphore, 0, 0) }

    deinit { sem_destroy(&semaphore) }

    package func put(_ result: T) {
        value = result
        sem_post(&semaphore)
    }

    /// Waits for the result, then returns it.
    package func take() -> T {
        _ = Posix.retrying { sem_wait(&semaphore) }
        return value!
    }
}
