import RCCore

/// What a session is configured with and what it reports.
extension MQTTSession {
    /// What the session needs besides its client.
    public struct Configuration: Sendable {
        public var brokers: [MQTTBroker]
        public var keepAlive: Int32 = 60
        /// The reconnect backoff after a full round of failures (``BrokerRotation``).
        public var reconnectBase = BrokerRotation.defaultBase
        public var reconnectCap = BrokerRotation.defaultCap
        /// The wait before asking again for a refused subscription (``SubscriptionRetry``).
        public var subscriptionBase = SubscriptionRetry.defaultBase
        public var subscriptionCap = SubscriptionRetry.defaultCap
        /// How each un-jittered wait is spread (tests: none).
        public var jitter: @Sendable (Duration) -> Duration = { MQTTBackoff.jittered($0) }
        /// The most message bytes handed on and not yet consumed.
        public var maximumBacklog = 16 * MQTTClient.defaultMaximumPayload
        /// The longest one pass of the client's loop waits for traffic. A pass ends sooner for
        /// traffic, for a call from another thread, for the keepalive and for a refused subscription
        /// coming due, so an idle session's thread wakes once a keepalive, not once a second (issue
        /// 30: each wake maps code back into an idle daemon).
        public var loopTimeout = Duration.seconds(30)

        public init(brokers: [MQTTBroker]) {
            precondition(!brokers.isEmpty, "a broker list is never empty")
            self.brokers = brokers
        }
    }

    /// What the session did, on its thread, in order.
    public enum Event: Sendable {
        /// The broker accepted the connection (the subscriptions are being asked for).
        case connected(MQTTBroker)
        /// The connection to the broker was lost (``failed(_:reason:lost:next:wait:worthLogging:)`` follows).
        case disconnected(MQTTBroker)
        /// A connect failed or a connection was lost; the session tries `next` after `wait`.
        /// `worthLogging`: a lost connection, the first round of failures (each broker once) and
        /// every tenth failure after it, so a broker down for hours does not fill a journal.
        case failed(MQTTBroker, reason: String, lost: Bool, next: MQTTBroker, wait: Duration, worthLogging: Bool)
        /// The broker refused the connection (its CONNACK), other than an MQTT 5 attempt refused
        /// for its version.
        case refused(MQTTBroker, reason: String)
        /// The broker does not speak MQTT 5: it is asked again at once, in 3.1.1, from now on.
        case fellBack(MQTTBroker)
        /// A message, at most the client's maximum payload: call ``consumed(topic:payload:)`` once done.
        case message(topic: String, payload: [UInt8])
        /// A message larger than the client's limit, dropped without a copy.
        case oversized(topic: String, size: Int)
        /// The broker acknowledged the publish with this id (PUBACK).
        case published(messageId: Int32)
        /// The SUBACK of a ``subscribe(_:qos:)`` of the owner's own.
        case subscribed(messageId: Int32, refused: Bool)
        /// The broker took a topic of ``setSubscriptions(_:qos:)``, after `afterRefusals` refusals.
        case subscriptionGranted(topic: String, broker: MQTTBroker, afterRefusals: Int)
        /// The broker refused a topic of ``setSubscriptions(_:qos:)``: asked again after `retryIn`.
        case subscriptionRefused(
            topic: String, broker: MQTTBroker, refusals: Int, retryIn: Duration, worthLogging: Bool)
        /// A subscribe could not even be sent (the connection went meanwhile: the next one asks again).
        case subscribeFailed(topic: String, broker: MQTTBroker, reason: String)
    }
}
