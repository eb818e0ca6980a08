import RCCore

/// How often in a row the broker refused each subscription (a SUBACK with a refusal code: an ACL,
/// a cluster that could not set up the subscription's storage in time), and how long to wait
/// before asking again on the same connection: `base` (1 s) doubling to `cap` (5 min), jittered by
/// the caller. A refused subscription leaves a client deaf on that topic while the connection
/// looks healthy, so it is asked for again rather than given up on; a reconnect instead would cost
/// every device of a fleet a fetch. A plain value with no clock.
public struct SubscriptionRetry: Sendable, Equatable {
    /// What one SUBACK means for its topic.
    public enum Outcome: Sendable, Equatable {
        /// Granted; `afterRefusals` is how many refusals came before (0: the usual case).
        case granted(afterRefusals: Int)
        /// Refused for the `refusals`-th time in a row: ask again after `step` (un-jittered);
        /// `log` says whether this refusal is worth a log line (the first, then every tenth).
        case refused(refusals: Int, step: Duration, log: Bool)
    }

    public static let defaultBase = Duration.seconds(1)
    public static let defaultCap = Duration.seconds(300)

    public let base: Duration
    public let cap: Duration
    private var refusals: [String: Int] = [:]

    public init(base: Duration = Self.defaultBase, cap: Duration = Self.defaultCap) {
        self.base = base
        self.cap = cap
    }

    /// The broker answered the subscription to `topic`.
    public mutating func answered(_ topic: String, refused: Bool) -> Outcome {
        let before = refusals[topic] ?? 0
        guard refused else {
            refusals[topic] = nil
            return .granted(afterRefusals: before)
        }
        let count = before + 1
        refusals[topic] = count
        return .refused(
            refusals: count, step: Backoff.step(failures: count, base: base, cap: cap),
            log: count == 1 || count.isMultiple(of: 10))
    }

    /// A new connection: every topic is asked for afresh, with no refusal counted.
    public mutating func reset() { refusals = [:] }
}
