/// A failed MQTT call: what kind (for callers that react, such as a publisher that ended the
/// connection itself) and the text, "what failed: why".
public struct MQTTError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable {
        /// The client could not be created or configured.
        case setup
        /// TLS could not be set up or negotiated.
        case tls
        /// No connection (never made, lost, or ended by ``MQTTClient/disconnect()``).
        case notConnected
        /// The broker refused the connection.
        case refused
        /// Any other network or protocol failure.
        case transport
    }

    public let kind: Kind
    public let message: String
    /// Only why, without what was being done (libmosquitto's or the system's text).
    public let reason: String

    public init(_ kind: Kind, _ message: String, reason: String? = nil) {
        self.kind = kind
        self.message = message
        self.reason = reason ?? message
    }

    public var description: String { message }
}
