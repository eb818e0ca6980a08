import RCCore

/// What the MQTT push channel is doing, as `rcagent status` shows it on its `push:` line. The
/// channel sets it on the status board as a value; the words are spelt only here.
enum PushState: Sendable, Equatable, CustomStringConvertible {
    case connecting(broker: String)
    case connected(broker: String, topics: [String])
    case reconnecting(broker: String)
    /// Connected, but the broker refused `topic` (asked for again with backoff).
    case subscriptionRefused(broker: String, topic: String)
    /// The connection could not start its network thread: MQTT is off until a restart.
    case notRunning(broker: String)

    var description: String {
        switch self {
        case let .connecting(broker): "mqtt \(broker) connecting"
        case let .connected(broker, topics): "mqtt \(broker) connected, topics \(topics.joined(separator: ", "))"
        case let .reconnecting(broker): "mqtt \(broker) disconnected, reconnecting"
        case let .subscriptionRefused(broker, topic):
            "mqtt \(broker) connected, subscription to \(topic) refused, retrying"
        case let .notRunning(broker): "mqtt \(broker) not running (no network thread)"
        }
    }
}

/// What the device report is doing, as `rcagent status` shows it on its `report:` line.
enum ReportState: Sendable, Equatable, CustomStringConvertible {
    case waiting(broker: String)
    /// The broker acknowledged the report of `at` on `topic`.
    case published(at: Timestamp, topic: String, broker: String)

    var description: String {
        switch self {
        case let .waiting(broker): "waiting for the broker (\(broker))"
        case let .published(at, topic, broker): "published \(StatusText.clock(at)) to \(topic) on \(broker)"
        }
    }
}
