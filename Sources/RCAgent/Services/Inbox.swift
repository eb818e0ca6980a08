@preconcurrency import Dispatch
import RCSystem
import Synchronization

/// An ordered queue with one consumer and any number of senders on any thread: the way events from
/// C callbacks, descriptor watches and control-socket threads enter the agent. Sending never blocks
/// and never starts a task, so events arrive in the order they were sent (a task per callback can
/// run in any order). The consumer can also wait with a deadline, which is how the agent's timers
/// work: no sleeping task per timer, just the earliest deadline of the next wait.
///
/// Unlike `AsyncStream`, cancelling the consumer's wait does not end the queue: a cancelled wait
/// returns `nil`, and ``close()`` is the one way to stop accepting elements.
///
/// A deadline costs nothing that outlives the wait: one timer per inbox, set again for each wait.
/// A `Task.sleep` per wait (as this once did) stays pending until its deadline even when the wait
/// ends first, holding its task and its dispatch timer: every request that woke the agent left
/// one behind until the next periodic fetch, hours away, and the daemon grew by about 800 bytes a
/// request (issue 25).
final class Inbox<Element: Sendable>: Sendable {
    private struct State {
        var queue: [Element] = []
        var head = 0
        var waiter: CheckedContinuation<Element?, Never>?
        /// When the waiting consumer gives up (`nil`: it waits for an element however long it takes).
        var deadline: ContinuousClock.Instant?
        /// Ends a wait at its deadline: created with the first wait that has one, set for each.
        var alarm: DispatchSourceTimer?
        var closed = false

        /// Hands the waiting consumer's continuation over (to resume it), leaving no wait behind.
        mutating func takeWaiter() -> CheckedContinuation<Element?, Never>? {
            defer {
                waiter = nil
                deadline = nil
            }
            return waiter
        }
    }

    private let state = Mutex(State())

    init() {}

    deinit {
        state.withLock { $0.alarm?.cancel() }
    }

    /// Queues `element`; `false` once the inbox is closed (the caller answers for it then).
    @discardableResult
    func send(_ element: Element) -> Bool {
        let (accepted, waiter): (Bool, CheckedContinuation<Element?, Never>?) = state.withLock { state in
            guard !state.closed else { return (false, nil) }
            if let waiter = state.takeWaiter() { return (true, waiter) }
            state.queue.append(element)
            return (true, nil)
        }
        waiter?.resume(returning: element)
        return accepted
    }

    /// Stops accepting elements and returns what was queued and not yet taken.
    func close() -> [Element] {
        let (waiter, left): (CheckedContinuation<Element?, Never>?, [Element]) = state.withLock { state in
            state.closed = true
            let left = Array(state.queue[state.head...])
            state.queue = []
            state.head = 0
            return (state.takeWaiter(), left)
        }
        waiter?.resume(returning: nil)
        return left
    }

    /// The next element; `nil` at `deadline` (if one is given), when the calling task is cancelled,
    /// or once the inbox is closed. A `nil` may also come a little early or for no reason (a clock
    /// set while waiting): callers look at their own deadlines when they get one.
    func next(until deadline: ContinuousClock.Instant? = nil) async -> Element? {
        if let element = poll() { return element }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready: Element?? = state.withLock { state in
                    if state.head < state.queue.count {
                        return .some(pop(&state))
                    }
                    // Checked under the lock that ``wake()`` takes, so neither a cancellation nor
                    // the deadline can slip in between the check and the wait.
                    if state.closed || Task.isCancelled { return .some(nil) }
                    if let deadline, ContinuousClock.now >= deadline { return .some(nil) }
                    // One consumer: a second waiter would orphan the first one's continuation.
                    precondition(state.waiter == nil, "Inbox.next called while another call waits")
                    state.waiter = continuation
                    state.deadline = deadline
                    // Set under the lock too, so a late ring of an earlier wait that sets it again
                    // cannot overwrite this wait's deadline.
                    if let deadline { setAlarm(&state, for: deadline) }
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            wake()
        }
    }

    /// Ends the consumer's wait, if it is waiting, with `nil`.
    private func wake() {
        state.withLock { $0.takeWaiter() }?.resume(returning: nil)
    }

    /// Rings the alarm at `deadline`. One timer, set again by every wait: a wait that ends early
    /// leaves nothing pending but this one ring, which then finds no deadline due. The timer counts
    /// on the monotonic clock, which stops while the system is suspended: after a resume it may ring
    /// late (the agent's clock watch wakes its loop then) and, should it ring early, it is set again.
    private func setAlarm(_ state: inout State, for deadline: ContinuousClock.Instant) {
        let alarm: DispatchSourceTimer
        if let existing = state.alarm {
            alarm = existing
        } else {
            alarm = DispatchSource.makeTimerSource(queue: .global())
            // Weak: the timer keeps its handler, and the inbox must not be kept by its own timer.
            alarm.setEventHandler { [weak self] in self?.alarmRang() }
            state.alarm = alarm
            alarm.activate()
        }
        let (seconds, attoseconds) = max(deadline - .now, .zero).components
        // Bounded, so that a deadline years away cannot overflow the nanoseconds.
        let nanoseconds = min(seconds, 365 * 86_400) * 1_000_000_000 + attoseconds / 1_000_000_000
        alarm.schedule(deadline: .now() + .nanoseconds(Int(nanoseconds)), leeway: .milliseconds(1))
    }

    private func alarmRang() {
        let waiter = state.withLock { state -> CheckedContinuation<Element?, Never>? in
            guard let deadline = state.deadline, state.waiter != nil else { return nil }
            if ContinuousClock.now < deadline {
                setAlarm(&state, for: deadline)
                return nil
            }
            return state.takeWaiter()
        }
        waiter?.resume(returning: nil)
    }

    /// The next element if one is queued, without waiting.
    func poll() -> Element? {
        state.withLock { state in state.head < state.queue.count ? pop(&state) : nil }
    }

    /// Takes the first element; the array is compacted once half of it has been consumed, so a
    /// long-lived queue costs amortized O(1) per element.
    private func pop(_ state: inout State) -> Element {
        let element = state.queue[state.head]
        state.head += 1
        if state.head == state.queue.count {
            state.queue.removeAll(keepingCapacity: true)
            state.head = 0
        } else if state.head > 64 && state.head * 2 > state.queue.count {
            state.queue.removeFirst(state.head)
            state.head = 0
        }
        return element
    }
}
