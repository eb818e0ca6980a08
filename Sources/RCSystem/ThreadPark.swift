import Glibc

/// Where detached threads wait for their next body instead of ending: a thread that finished a body
/// parks for up to `idleTimeout`, and ``start(stackSize:_:)`` hands the next body to a parked thread
/// of the same stack size when there is one, or else creates a thread. A small fetch used to create
/// two threads (the control connection's and the curl transfer's): clone3, a stack mapped, TLS set
/// up and torn down, about 8% of the daemon's CPU for it.
///
/// Bounded both ways: at most `capacity` threads park (a thread that finds the park full ends), and a
/// parked thread that gets no body within `idleTimeout` ends, so an idle daemon is back to the
/// threads it needs. A body never waits for a thread: one started while every thread is busy gets a
/// new one.
///
/// The next body inherits the thread as the last one left it: a body that changes per-thread state
/// (file-system ids, the signal mask) puts it back before it returns, as the ones here do.
package final class ThreadPark: @unchecked Sendable {
    // @unchecked: `parked` and every worker's `next` are only touched with `lock` held.
    package let capacity: Int
    package let idleTimeout: Duration
    /// Allocated: a pthread mutex must not move.
    private let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    /// The parked threads, the most recently parked last (it is handed the next body: its stack and
    /// caches are the warmest, and the others' timeouts run out first).
    private var parked: [Worker] = []

    /// The park every ``DetachedThread`` start goes through: room for the few threads a busy daemon
    /// uses at once (a control connection, a transfer, a hook, the MQTT network loop), kept a few
    /// seconds.
    package static let shared = ThreadPark(capacity: 4, idleTimeout: .seconds(5))

    package init(capacity: Int, idleTimeout: Duration) {
        self.capacity = capacity
        self.idleTimeout = idleTimeout
        pthread_mutex_init(lock, nil)
    }

    deinit {
        // Every thread holds the park (its context retains it): none is left when this runs.
        pthread_mutex_destroy(lock)
        lock.deallocate()
    }

    /// How many threads are parked now.
    package var parkedCount: Int {
        withLock { parked.count }
    }

    /// Runs `body` on a parked thread of `stackSize` bytes of stack, or on a new detached one.
    /// `false` when no thread was parked and pthread_create failed (threads or memory ran out).
    package func start(stackSize: Int, _ body: @escaping @Sendable () -> Void) -> Bool {
        let handed = withLock { () -> Bool in
            guard let index = parked.lastIndex(where: { $0.stackSize == stackSize }) else { return false }
            let worker = parked.remove(at: index)
            worker.next = body
            pthread_cond_signal(worker.wake)
            return true
        }
        return handed || create(stackSize: stackSize, body)
    }

    /// A new detached thread that runs `body`, then parks.
    private func create(stackSize: Int, _ body: @escaping () -> Void) -> Bool {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        pthread_attr_setstacksize(&attributes, stackSize)
        let worker = Worker(stackSize: stackSize)
        worker.next = body  // before the thread exists: nothing else sees the worker yet
        let context = Unmanaged.passRetained(Thread(park: self, worker: worker)).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(
            &thread, &attributes,
            { context in
                let thread = Unmanaged<Thread>.fromOpaque(context!).takeRetainedValue()
                thread.park.serve(thread.worker)
                return nil
            }, context)
        if rc != 0 {
            Unmanaged<Thread>.fromOpaque(context).release()
            return false
        }
        return true
    }

    /// A thread's whole life: the body it was created for, then each one it is handed while parked,
    /// until a park times out or finds no room.
    private func serve(_ worker: Worker) {
        var body = withLock { worker.take() }
        while body != nil {
            Self.run(&body)
            body = park(worker)
        }
    }

    /// Runs `body` and lets go of it (leaving nil) before returning: a parked thread must not keep
    /// what the body captured (a connection's descriptor owner, a continuation, a server) alive for
    /// its timeout.
    private static func run(_ body: inout (() -> Void)?) {
        let current = body
        body = nil
        current?()
    }

    /// Waits up to `idleTimeout` for the next body; nil when none came or the park is full (the
    /// thread then ends).
    private func park(_ worker: Worker) -> (() -> Void)? {
        withLock {
            guard parked.count < capacity else { return nil }
            parked.append(worker)
            var deadline = Self.monotonicDeadline(after: idleTimeout)
            while worker.next == nil {
                // pthread_cond_timedwait releases the lock while it waits. Woken without a body
                // (spuriously) it waits again, to the same deadline.
                if pthread_cond_timedwait(worker.wake, lock, &deadline) == ETIMEDOUT, worker.next == nil {
                    parked.removeAll { $0 === worker }
                    return nil
                }
            }
            return worker.take()
        }
    }

    private func withLock<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        return body()
    }

    /// CLOCK_MONOTONIC now + `duration`, as pthread_cond_timedwait reads it (see ``Worker/wake``).
    private static func monotonicDeadline(after duration: Duration) -> timespec {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let (seconds, attoseconds) = duration.components
        var deadline = timespec(
            tv_sec: now.tv_sec + Int(seconds), tv_nsec: now.tv_nsec + Int(attoseconds / 1_000_000_000))
        if deadline.tv_nsec >= 1_000_000_000 {
            deadline.tv_sec += 1
            deadline.tv_nsec -= 1_000_000_000
        }
        return deadline
    }

    /// One thread's mailbox: what it runs next, and the condition it parks on.
    private final class Worker {
        let stackSize: Int
        /// The body handed over, set by ``ThreadPark/start(stackSize:_:)`` with the lock held.
        var next: (() -> Void)?
        /// Timed against CLOCK_MONOTONIC (the default, the wall clock, would stretch or cut a park
        /// when the time is set). Allocated: a pthread condition must not move.
        let wake = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

        init(stackSize: Int) {
            self.stackSize = stackSize
            var attributes = pthread_condattr_t()
            pthread_condattr_init(&attributes)
            pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
            pthread_cond_init(wake, &attributes)
            pthread_condattr_destroy(&attributes)
        }

        deinit {
            pthread_cond_destroy(wake)
            wake.deallocate()
        }

        /// The body handed over, leaving none.
        func take() -> (() -> Void)? {
            defer { next = nil }
            return next
        }
    }

    /// What a new thread is started with: the park it returns to and its mailbox.
    private final class Thread {
        let park: ThreadPark
        let worker: Worker
        init(park: ThreadPark, worker: Worker) {
            self.park = park
            self.worker = worker
        }
    }
}
