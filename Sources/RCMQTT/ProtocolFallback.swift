/// Which MQTT version a connect to each broker of a list speaks: MQTT 5 first (the broker is then
/// told the largest message the client takes), MQTT 3.1.1 for good with a broker whose CONNACK
/// refused the version (NATS, mosquitto 1.x), from then on for the rest of the run. A connection
/// closed without a CONNACK is not a refusal: a transient failure must not cost the bound for
/// good. A plain value: the session asks it before each connect and tells it each refusal.
public struct ProtocolFallback: Sendable, Equatable {
    /// Brokers (by index in the list) found not to speak MQTT 5.
    public private(set) var legacyBrokers: Set<Int> = []

    public init() {}

    /// The version of the next connect to the broker at `index`.
    public func version(for index: Int) -> MQTTClient.ProtocolVersion {
        legacyBrokers.contains(index) ? .v311 : .v5
    }

    /// The broker at `index` refused the connection for its protocol version: `true` when that was
    /// an MQTT 5 attempt (connect again at once, in 3.1.1, and remember it); `false` when it was
    /// already 3.1.1 (a plain refusal, handled as any failed connect).
    public mutating func refusedVersion(of index: Int) -> Bool {
        legacyBrokers.insert(index).inserted
    }
}
