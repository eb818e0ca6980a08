import Dispatch
import RCSystem
import Synchronization

/// Logs refused input (an oversized MQTT message, an unreadable push payload, a realtime message
/// past its limit) without letting whoever sends it fill the journal: the first refusal of a kind
/// is logged at once; later ones of the same kind within `interval` are counted, and one line at
/// the end of that interval gives the count and the last of them. Nothing refused goes unsaid, and
/// a sender gets at most one line per kind per interval.
public final class RefusalLog: Sendable {
    public typealias Schedule = @Sendable (Duration, @escaping @Sendable () -> Void) -> Void

    private let log: Logger
    private let interval: Duration
    private let now: @Sendable () -> ContinuousClock.Instant
    private let schedule: Schedule
    private struct Kind {
        var lastLogged: ContinuousClock.Instant
        /// Refused since the last line, not logged yet; their last message.
        var suppressed = 0
        var last = ""
    }
    private let kinds = Mutex<[String: Kind]>([:])

    /// `now` and `schedule` (run a closure after a delay) are the clock, replaceable in tests.
    public init(
        _ log: Logger, interval: Duration = .seconds(60),
        now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now },
        schedule: @escaping Schedule = RefusalLog.afterDelay
    ) {
        self.log = log
        self.interval = interval
        self.now = now
        self.schedule = schedule
    }

    public static let afterDelay: Schedule = { delay, work in
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(delay.milliseconds)), execute: work)
    }

    /// Refusals of one `kind` ("oversized", "unreadable": a fixed set, so the map stays small)
    /// share a rate; `message` is the line, at warning priority ("Ignoring an MQTT message on T: ...").
    public func refused(_ kind: String, _ message: String) {
        let instant = now()
        enum Action { case log, count, countAndSchedule }
        let action: Action = kinds.withLock { kinds in
            guard var known = kinds[kind], instant - known.lastLogged < interval else {
                // First of its kind, or the last line is old: logged now (anything counted since
                // was flushed by the scheduled line).
                kinds[kind] = Kind(lastLogged: instant)
                return .log
            }
            known.suppressed += 1
            known.last = message
            kinds[kind] = known
            return known.suppressed == 1 ? .countAndSchedule : .count
        }
        switch action {
        case .log: log.warning(message)
        case .count: break
        case .countAndSchedule:
            let wait = max(.zero, interval - (instant - (kinds.withLock { $0[kind]?.lastLogged } ?? instant)))
            schedule(wait) { [self] in flush(kind) }
        }
    }

    /// Writes the count of `kind`'s refusals not logged yet, with the last one, if any.
    public func flush(_ kind: String) {
        let pending: (Int, String)? = kinds.withLock { kinds in
            guard let known = kinds[kind], known.suppressed > 0 else { return nil }
            kinds[kind] = Kind(lastLogged: now())
            return (known.suppressed, known.last)
        }
        guard let (count, last) = pending else { return }
        log.warning("\(last) (\(count) like it since the last such line, the last one shown)")
    }
}
