/// What an ``MQTTSession`` needs of a client: ``MQTTClient`` (libmosquitto) in the programs, a
/// scripted fake in tests, which can refuse connects and versions, refuse subscriptions and lose
/// the connection on cue. Calls come from the session's thread (``loop(timeout:)``, connect) and
/// from its owners' (subscribe, publish, ``disconnect()``): the client locks its own state.
public protocol MQTTSessionClient: AnyObject, Sendable {
    /// Where events go, delivered on the thread running ``loop(timeout:)``.
    func onEvent(_ handler: @escaping @Sendable (MQTTClient.Event) -> Void)
    /// The last will of the next connect.
    func setWill(_ will: MQTTClient.Will?) throws(MQTTError)
    /// Opens the connection (blocking); the CONNACK arrives in the loop.
    func connect(host: String, port: Int32, keepAlive: Int32, protocolVersion: MQTTClient.ProtocolVersion)
        throws(MQTTError)
    /// Ends the connection; a loop running on another thread then fails or returns.
    func disconnect()
    /// One round of network traffic; throws once the connection is refused, lost or ended.
    func loop(timeout: Duration) throws(MQTTError)
    func subscribe(_ topic: String, qos: Int32) throws(MQTTError) -> Int32
    func unsubscribe(_ topic: String) throws(MQTTError)
    func publish(_ payload: [UInt8], topic: String, qos: Int32, retain: Bool) throws(MQTTError) -> Int32
}

extension MQTTClient: MQTTSessionClient {}

/// One broker of a failover list, as an `mqtt://` URL names it.
public struct MQTTBroker: Sendable, Equatable, Hashable {
    public let host: String
    public let port: Int32

    public init(host: String, port: Int32) {
        self.host = host
        self.port = port
    }

    /// `host:port`, for status and the log.
    public var name: String { "\(host):\(port)" }
}
