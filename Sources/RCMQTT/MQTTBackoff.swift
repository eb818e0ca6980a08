/// The jitter every MQTT wait gets (reconnects, subscription retries): ±50% around the step, so a
/// fleet whose broker died, or whose subscriptions a cluster refused, does not come back in step.
public enum MQTTBackoff {
    /// `step` scaled by `factor` (drawn from 0.5...1.5 unless given), in whole milliseconds.
    public static func jittered(_ step: Duration, factor: Double = Double.random(in: 0.5...1.5)) -> Duration {
        guard step > .zero else { return .zero }
        return .milliseconds(Int64((Double(step.milliseconds) * min(max(factor, 0.5), 1.5)).rounded()))
    }
}
