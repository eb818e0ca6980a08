/// The exponential step every retry in the project waits on: `base` after the first failure,
/// doubling with each further one, never more than `cap`. Callers add their own jitter around it
/// (the daemon's fetches and Google calls ±50%, the relay up to a fifth more).
public enum Backoff {
    /// The un-jittered wait after the `failures`-th failure in a row (1-based; 0 counts as 1).
    public static func step(failures: Int, base: Duration, cap: Duration) -> Duration {
        // The exponent is clamped so the shift cannot overflow; 2^30 times any base here is far past any cap.
        let doubled = Double(base.milliseconds) * Double(1 << min(max(failures - 1, 0), 30))
        return .milliseconds(Int64(min(doubled, Double(cap.milliseconds))))
    }
}
