import Synchronization

/// An ordered queue with one consumer and any number of senders on any thread: the way events from
/// C callbacks, descriptor watches and control-socket threads enter the agent. Sending never blocks
/// and never starts a task, so events arrive in the order they were sent (a task per callback can
/// run in any order). The consumer can also wait with a deadline, which is how the agent's timers
/// work: no sleeping task per timer, just the earliest deadline of the next wait.
///
/// Unlike `AsyncStream`, cancelling the consumer's wait does not end the queue: a cancelled wait
/// returns `nil`, and ``close()`` is the one way to stop accepting elements.
final class Inbox<Element: Sendable>: Sendable {
    private struct State {
        var queue: [Element] = []
        var head = 0
        var waiter: CheckedContinuation<Element?, Never>?
        var closed = false
    }

    private let state = Mutex(State())

    init() {}

    /// Queues `element`; `false` once the inbox is closed (the caller answers for it then).
    @discardableResult
    func send(_ element: Element) -> Bool {
        let (accepted, waiter): (Bool, CheckedContinuation<Element?, Never>?) = state.withLock { state in
            guard !state.closed else { return (false, nil) }
            if let waiter = state.waiter {
                state.waiter = nil
                return (true, waiter)
            }
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
            defer { state.waiter = nil }
            return (state.waiter, left)
        }
        waiter?.resume(returning: nil)
        return left
    }

    /// The next element; `nil` at `deadline` (if one is given), when the calling task is cancelled,
    /// or once the inbox is closed.
    func next(until deadline: ContinuousClock.Instant? = nil) async -> Element? {
        if let element = poll() { return element }
        return await withTaskGroup(of: Void.self) { group in
            if let deadline {
                // The timer is a child of this wait: it ends with it, whoever wins.
                group.addTask { [self] in
                    try? await Task.sleep(until: deadline, clock: .continuous)
                    wake()
                }
            }
            let element = await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    let ready: Element?? = state.withLock { state in
                        if state.head < state.queue.count {
                            return .some(pop(&state))
                        }
                        // Checked under the lock that ``wake()`` takes, so neither a cancellation nor
                        // the deadline can slip in between the check and the wait.
                        if state.closed || Task.isCancelled { return .some(nil) }
                        if let deadline, ContinuousClock.now >= deadline { return .some(nil) }
                        state.waiter = continuation
                        return .none
                    }
                    if let ready { continuation.resume(returning: ready) }
                }
            } onCancel: {
                wake()
            }
            group.cancelAll()
            return element
        }
    }

    /// Ends the consumer's wait, if it is waiting, with `nil`.
    private func wake() {
        let waiter = state.withLock { state in
            defer { state.waiter = nil }
            return state.waiter
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
