import Glibc
import RCCore
import RCSystem
import Synchronization

/// The life of a long-running program (rcagentd, `rcadmin relay`, `rcadmin fleet status --watch`),
/// one way for all of them: the signals that end or reload it are caught first thing, before
/// anything starts, and arrive in ``signals`` (none is lost, however early); what it started stops
/// in reverse start order, each part within what is left of one deadline, after which the parts
/// still running are cancelled and left behind so that the program ends on time.
public final class Lifecycle: Sendable {
    /// One step of a stop: `stop` ends one part of the program and returns once it has ended.
    public struct Part: Sendable {
        public let name: String
        public let stop: @Sendable () async -> Void
        public init(_ name: String, stop: @escaping @Sendable () async -> Void) {
            self.name = name
            self.stop = stop
        }
    }

    /// The termination (and reload) signals, from the moment the lifecycle exists.
    public let signals: SignalStream

    /// Catches `signals` (SIGTERM, SIGINT, and SIGHUP for a program that reloads) and ignores
    /// SIGPIPE (a closed reader is a failed write, not the end). Make it before anything starts.
    public init(signals: [Int32]) throws(SystemError) {
        signal(SIGPIPE, SIG_IGN)
        self.signals = try SignalStream(signals)
    }

    /// The next signal: the end (or a reload) of the program.
    public func nextSignal() async -> Int32? {
        var iterator = signals.stream.makeAsyncIterator()
        return await iterator.next()
    }

    /// Stops `parts`, given in start order, in reverse, each awaited until `deadline` (from now)
    /// has passed. Then the part still stopping is cancelled, the ones after it stop in tasks
    /// cancelled from the start, and none of them is awaited: the program ends on time. Returns
    /// the names of the parts not awaited to their end (empty: a clean stop).
    public static func stop(_ parts: [Part], within deadline: Duration) async -> [String] {
        let end = ContinuousClock.now + deadline
        var late: [String] = []
        for part in parts.reversed() {
            let task = Task { await part.stop() }
            if !late.isEmpty {
                task.cancel()
                late.append(part.name)
            } else if await !ended(task, by: end) {
                task.cancel()
                late.append(part.name)
            }
        }
        return late
    }

    /// Whether `task` ends by `end`: waits for the first of the two, holding no thread.
    private static func ended(_ task: Task<Void, Never>, by end: ContinuousClock.Instant) async -> Bool {
        let race = Race()
        return await withCheckedContinuation { continuation in
            race.set(continuation)
            Task {
                await task.value
                race.finish(true)
            }
            Task {
                try? await Task.sleep(until: end, clock: .continuous)
                race.finish(false)
            }
        }
    }

    /// The first of two results to arrive resumes the waiter; the other is dropped.
    private final class Race: Sendable {
        private let waiter = Mutex<CheckedContinuation<Bool, Never>?>(nil)
        func set(_ continuation: CheckedContinuation<Bool, Never>) {
            waiter.withLock { $0 = continuation }
        }
        func finish(_ value: Bool) {
            waiter.withLock { waiter in
                waiter?.resume(returning: value)
                waiter = nil
            }
        }
    }
}
