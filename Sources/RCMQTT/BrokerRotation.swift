import RCCore

/// Which broker of a failover list (`[Push] MQTT=` with several URLs, the nodes of one cluster) a
/// connection tries next, and how long it waits first. A failed connect or a lost connection moves
/// on to the next broker at once; only when every broker of the list failed in turn (a full
/// round) does the connection back off, `base` (1 s) doubling to `cap` (60 s) per failed round.
/// A plain value with no clock: the session's thread applies the wait, jittered
/// (``MQTTBackoff/jittered(_:factor:)``); tests drive it step by step.
public struct BrokerRotation: Sendable {
    public let count: Int
    /// The broker to try next (an index into the list).
    public private(set) var index = 0
    /// Brokers tried since the last connect or the last full round.
    private var tried = 0
    /// Full rounds in a row without a connection.
    private var failedRounds = 0
    public let base: Duration
    public let cap: Duration

    public static let defaultBase = Duration.seconds(1)
    public static let defaultCap = Duration.seconds(60)

    public init(count: Int, base: Duration = Self.defaultBase, cap: Duration = Self.defaultCap) {
        precondition(count > 0, "a broker list is never empty")
        self.count = count
        self.base = base
        self.cap = cap
    }

    /// The broker at ``index`` accepted the connection: a new round starts from it.
    public mutating func connected() {
        tried = 0
        failedRounds = 0
    }

    /// The connect to the broker at ``index`` failed, or its connection was lost: moves to the
    /// next broker and returns the wait before trying it (zero within a round; the backoff step,
    /// un-jittered, after a full round).
    public mutating func failed() -> Duration {
        index = (index + 1) % count
        tried += 1
        guard tried >= count else { return .zero }
        tried = 0
        failedRounds += 1
        return Backoff.step(failures: failedRounds, base: base, cap: cap)
    }
}
