/// The random spreads the project puts around its waits, so a fleet that saw the same event
/// (a push, a dead server) does not act in step.
public enum Jitter {
    /// A random wait in 0...`limit`, to the millisecond (a push fetch's spread); zero when `limit`
    /// is not positive.
    public static func upTo(_ limit: Duration) -> Duration {
        .milliseconds(Int64.random(in: 0...max(limit.milliseconds, 0)))
    }

    /// `wait` ±50%: scaled by 0.5 + `random`, where `random` is in 0..<1 (a retry's backoff; tests
    /// pass the number).
    public static func halfAround(_ wait: Duration, random: Double = .random(in: 0..<1)) -> Duration {
        .milliseconds(Int64(Double(wait.milliseconds) * (0.5 + random)))
    }
}
