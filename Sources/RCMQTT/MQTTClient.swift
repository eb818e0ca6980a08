internal import CLazyLibraries
internal import CMosquitto
import Glibc
import RCCore
import RCSystem
import Synchronization

/// One MQTT client connection, owned: the libmosquitto handle is created in `init` and destroyed in
/// `deinit`. It connects, subscribes, publishes and runs the network loop on the caller's thread
/// (never the cooperative pool: every call but ``disconnect()`` may block); what the broker does
/// arrives as ``Event``s on that thread. Every user drives it through an ``MQTTSession`` (it is the
/// session's ``MQTTSessionClient``), which reconnects, rotates and falls back. Unchecked Sendable: libmosquitto locks its own state, so ``disconnect()`` may come from
/// another thread while the loop runs; the event handler is behind a Mutex.
public final class MQTTClient: @unchecked Sendable {
    /// How the client identifies itself and secures the connection.
    public struct Options: Sendable {
        /// `nil`: the broker gets a random id (and the session must be clean).
        public var clientId: String?
        /// Off: the broker keeps the subscriptions and QoS 1 messages while the client is away.
        public var cleanSession = true
        public var username: String?
        public var password: String?
        /// TLS on; then `caFile` is the only CA trusted, or the system's in /etc/ssl/certs without one.
        public var tls = false
        public var caFile: String?
        /// TLS only: the client's own certificate (PEM, chain allowed) and its unencrypted key, for
        /// brokers that tell devices apart by certificate. Both or neither.
        public var certificateFile: String?
        public var keyFile: String?
        /// What the broker publishes for this client when its connection dies without a DISCONNECT.
        public var will: Will?
        /// One thread of the caller's runs ``loop(timeout:)`` while others publish, subscribe or
        /// disconnect: their packets are queued and the loop is woken to write them
        /// (`mosquitto_threaded_set`). Without it a call writes on its own thread, racing the
        /// loop: a DISCONNECT sent so could be lost, and the broker then published the will.
        public var threaded = false
        /// The largest message payload taken, in bytes: a larger one is refused in libmosquitto's
        /// callback before any byte of it is copied (``Event/oversized(topic:size:)``), and an MQTT
        /// v5 connection tells the broker (CONNECT Maximum Packet Size), which then does not send
        /// it at all. On MQTT 3.1.1 there is no way to tell: libmosquitto reads the whole packet
        /// before the callback, so the broker's own limit is what bounds it there.
        public var maximumPayload = MQTTClient.defaultMaximumPayload

        public init(clientId: String? = nil, cleanSession: Bool = true) {
            self.clientId = clientId
            self.cleanSession = cleanSession
        }
    }

    /// A last will: the message the broker publishes on the client's behalf when the connection ends
    /// without a DISCONNECT (a crash, a lost network, a keepalive that ran out).
    public struct Will: Sendable, Equatable {
        public var topic: String
        public var payload: [UInt8]
        public var qos: Int32
        public var retain: Bool

        public init(topic: String, payload: [UInt8], qos: Int32 = 1, retain: Bool = true) {
            self.topic = topic
            self.payload = payload
            self.qos = qos
            self.retain = retain
        }
    }

    /// The MQTT version a connection speaks.
    public enum ProtocolVersion: Sendable, Equatable, CustomStringConvertible {
        /// MQTT 3.1.1: every broker speaks it (NATS only this one).
        case v311
        /// MQTT 5: the client can tell the broker the largest packet it takes.
        case v5

        public var description: String { self == .v5 ? "MQTT 5" : "MQTT 3.1.1" }
    }

    /// The default of ``Options/maximumPayload``: 64 KiB, far above any push message (a ping is
    /// under 200 bytes, an APNs-style live activity payload at most 4 KiB).
    public static let defaultMaximumPayload = 64 << 10

    /// What the broker did, delivered on the thread running the loop, in order.
    public enum Event: Sendable {
        /// The broker accepted the connection (CONNACK 0).
        case connected
        /// The broker refused the connection: its CONNACK reason; `protocolVersion` when the reason
        /// is the protocol version (a broker that does not speak MQTT 5: NATS).
        case refused(String, protocolVersion: Bool = false)
        /// The connection ended; `reason` is libmosquitto's text ("No error" after ``disconnect()``).
        case disconnected(reason: String)
        /// A message arrived on `topic`.
        case message(topic: String, payload: [UInt8])
        /// A message larger than ``Options/maximumPayload`` arrived on `topic` and was dropped
        /// without being copied: `size` is its payload's length.
        case oversized(topic: String, size: Int)
        /// The broker acknowledged the message with this id (PUBACK at QoS 1).
        case published(messageId: Int32)
        /// The broker answered the subscription with this id (SUBACK): the QoS it granted each
        /// filter, in order, or ``MQTTClient/refusedQoS`` for a filter it refused (an ACL, a
        /// cluster that could not set up the subscription's storage).
        case subscribed(messageId: Int32, grantedQoS: [Int32])
    }

    /// The "QoS" a SUBACK gives a filter the broker refused (MQTT 3.1.1, 3.9.3); MQTT 5 has more
    /// reason codes for it, all at or above this one (see ``isRefusal(_:)``).
    public static let refusedQoS: Int32 = 0x80

    /// Whether a SUBACK's code for one filter is a refusal, in either protocol version.
    public static func isRefusal(_ granted: Int32) -> Bool { granted >= refusedQoS || granted < 0 }

    /// CONNACK codes for "unsupported protocol version": MQTT 3.1.1's (1) and MQTT 5's (0x84),
    /// which libmosquitto reports for a 3.1.1 CONNACK answering a v5 CONNECT.
    private static let protocolRefusals: Set<Int32> = [1, 0x84]
    private let maximumPayload: Int
    private let persistentSession: Bool

    private let handle: OpaquePointer
    /// The handler, boxed in a class: a closure kept directly in the Mutex was wrapped in two more
    /// reabstraction thunks by every `withLock` (Swift 6.3), so each event made the next call
    /// deeper: 20,000 messages overflowed a 512 KiB thread stack in a debug build, and in a
    /// release build the cost of an event grew with the number before it.
    private final class Handler: Sendable {
        let call: @Sendable (Event) -> Void
        init(_ call: @escaping @Sendable (Event) -> Void) { self.call = call }
    }
    private let handler = Mutex<Handler?>(nil)

    /// mosquitto_lib_init is not thread-safe: it runs once, before the first handle exists.
    private static let initialized: Bool = { mosquitto_lib_init() == MOSQ_ERR_SUCCESS.rawValue }()

    public init(_ options: Options) throws(MQTTError) {
        // libmosquitto is loaded on first use (CLazyLibraries): a device without MQTT need not have it.
        if let problem = rc_lazy_require(RC_LAZY_MOSQUITTO) {
            throw MQTTError(.setup, "MQTT needs \(String(cString: problem))")
        }
        _ = Self.initialized
        guard let handle = mosquitto_new(options.clientId, options.cleanSession, nil) else {
            throw MQTTError(.setup, "cannot create an MQTT client: \(String(cString: strerror(errno)))")
        }
        if let username = options.username { mosquitto_username_pw_set(handle, username, options.password) }
        if options.tls {
            // libmosquitto fopen()s these files itself: a FIFO there would block the caller for good.
            for (what, file) in [
                ("CA file", options.caFile), ("client certificate", options.certificateFile),
                ("client key", options.keyFile),
            ] {
                guard let file else { continue }
                do { try FileBytes.checkRegularFile(file) } catch {
                    mosquitto_destroy(handle)
                    throw MQTTError(.tls, "cannot use the \(what) \(file): \(error)")
                }
            }
            // An encrypted key would make OpenSSL ask for its passphrase on the terminal (rcadmin)
            // or fail obscurely (the daemon): the callback answers "no passphrase", so it fails
            // at connect with libmosquitto's TLS error instead.
            let rc = mosquitto_tls_set(
                handle, options.caFile, options.caFile == nil ? "/etc/ssl/certs" : nil, options.certificateFile,
                options.keyFile
            ) { _, _, _, _ in 0 }
            guard rc == MOSQ_ERR_SUCCESS.rawValue else {
                mosquitto_destroy(handle)
                throw MQTTError(.tls, "cannot set up TLS: \(String(cString: mosquitto_strerror(rc)))")
            }
        }
        if options.threaded { mosquitto_threaded_set(handle, true) }
        if let will = options.will {
            let rc = Self.setWill(handle, will)
            guard rc == MOSQ_ERR_SUCCESS.rawValue else {
                mosquitto_destroy(handle)
                throw MQTTError(.setup, "cannot set the last will: \(String(cString: mosquitto_strerror(rc)))")
            }
        }
        // Assigned only now: a throw after every stored property is set would run `deinit`, which
        // destroys the handle a second time (the error paths above destroy it themselves).
        maximumPayload = max(0, options.maximumPayload)
        persistentSession = !options.cleanSession
        self.handle = handle
        // The callbacks find this object through the handle's user data. Unretained: the owner stops
        // the loop before it lets go of the client, and `deinit` destroys the handle.
        mosquitto_user_data_set(handle, Unmanaged.passUnretained(self).toOpaque())
        mosquitto_connect_callback_set(handle) { _, context, rc in
            let client = Unmanaged<MQTTClient>.fromOpaque(context!).takeUnretainedValue()
            guard rc != 0 else { return client.deliver(.connected) }
            // MQTT 5 reason codes are 0x80 and above; 3.1.1's CONNACK codes 1 to 5.
            let reason = String(cString: rc >= 0x80 ? mosquitto_reason_string(rc) : mosquitto_connack_string(rc))
            client.deliver(.refused(reason, protocolVersion: MQTTClient.protocolRefusals.contains(rc)))
        }
        mosquitto_disconnect_callback_set(handle) { _, context, rc in
            let client = Unmanaged<MQTTClient>.fromOpaque(context!).takeUnretainedValue()
            client.deliver(.disconnected(reason: String(cString: mosquitto_strerror(rc))))
        }
        mosquitto_publish_callback_set(handle) { _, context, messageId in
            Unmanaged<MQTTClient>.fromOpaque(context!).takeUnretainedValue().deliver(.published(messageId: messageId))
        }
        mosquitto_subscribe_callback_set(handle) { _, context, messageId, count, granted in
            let qos = granted.map { Array(UnsafeBufferPointer(start: $0, count: Int(max(count, 0)))) } ?? []
            Unmanaged<MQTTClient>.fromOpaque(context!).takeUnretainedValue().deliver(
                .subscribed(messageId: messageId, grantedQoS: qos))
        }
        mosquitto_message_callback_set(handle) { _, context, message in
            guard let context, let message else { return }
            let client = Unmanaged<MQTTClient>.fromOpaque(context).takeUnretainedValue()
            let topic = message.pointee.topic.map { String(cString: $0) } ?? "?"
            // Checked before any copy: a message past the limit costs nothing more than what
            // libmosquitto already holds (freed when this returns), whatever its size.
            let size = Int(message.pointee.payloadlen)
            guard size <= client.maximumPayload else { return client.deliver(.oversized(topic: topic, size: size)) }
            // Copied out: libmosquitto frees the message when the callback returns.
            let payload =
                message.pointee.payload.map {
                    Array(UnsafeRawBufferPointer(start: $0, count: Int(message.pointee.payloadlen)))
                } ?? []
            client.deliver(.message(topic: topic, payload: payload))
        }
    }

    deinit {
        mosquitto_destroy(handle)
    }

    /// Where events go; set it before connecting (a later one replaces it).
    public func onEvent(_ handler: @escaping @Sendable (Event) -> Void) {
        let boxed = Handler(handler)
        self.handler.withLock { $0 = boxed }
    }

    private func deliver(_ event: Event) {
        let handler = handler.withLock { $0 }
        handler?.call(event)
    }

    /// Sets (or, with `nil`, clears) the last will the next connect hands the broker; the one of a
    /// connection already open does not change.
    public func setWill(_ will: Will?) throws(MQTTError) {
        guard let will else { return try check(mosquitto_will_clear(handle), "cannot clear the last will") }
        try check(Self.setWill(handle, will), "cannot set the last will on \(will.topic)")
    }

    private static func setWill(_ handle: OpaquePointer, _ will: Will) -> Int32 {
        // libmosquitto copies topic and payload.
        will.payload.withUnsafeBytes {
            mosquitto_will_set(handle, will.topic, Int32($0.count), $0.baseAddress, will.qos, will.retain)
        }
    }

    /// Opens the connection (blocking: DNS and TCP connect); the CONNACK arrives in the loop. With
    /// MQTT 5 the CONNECT carries the largest packet the client takes (``Options/maximumPayload``
    /// plus room for the topic and properties) and, for a persistent session, a session expiry
    /// interval that never ends, as a 3.1.1 session lasts. A broker that does not speak MQTT 5
    /// refuses with ``Event/refused(_:protocolVersion:)``: connect again with `.v311` then.
    public func connect(
        host: String, port: Int32, keepAlive: Int32 = 60, protocolVersion: ProtocolVersion = .v311
    ) throws(MQTTError) {
        let what = "cannot connect to \(host):\(port)"
        guard protocolVersion == .v5 else {
            try check(mosquitto_int_option(handle, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311), what)
            return try check(mosquitto_connect_bind_v5(handle, host, port, keepAlive, nil, nil), what)
        }
        try check(mosquitto_int_option(handle, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5), what)
        var properties: OpaquePointer?
        defer { mosquitto_property_free_all(&properties) }
        // Room for the rest of a PUBLISH: fixed header (5), topic (2 + at most 65,535), packet id
        // (2), and properties, bounded here by 4 KiB.
        let packet = UInt32(clamping: maximumPayload + 5 + 2 + 65_535 + 2 + 4_096)
        try check(
            mosquitto_property_add_int32(&properties, Int32(MQTT_PROP_MAXIMUM_PACKET_SIZE.rawValue), packet), what)
        if persistentSession {
            try check(
                mosquitto_property_add_int32(
                    &properties, Int32(MQTT_PROP_SESSION_EXPIRY_INTERVAL.rawValue), UInt32.max), what)
        }
        try check(mosquitto_connect_bind_v5(handle, host, port, keepAlive, nil, properties), what)
    }

    /// Ends the connection; a loop running on another thread returns.
    public func disconnect() {
        mosquitto_disconnect(handle)
    }

    /// Asks for the messages of `topic` (a filter; `+` and `#` are wildcards) and returns the
    /// request's message id (see ``Event/subscribed(messageId:)``).
    @discardableResult
    public func subscribe(_ topic: String, qos: Int32 = 1) throws(MQTTError) -> Int32 {
        var messageId: Int32 = 0
        try check(mosquitto_subscribe(handle, &messageId, topic, qos), "cannot subscribe to \(topic)")
        return messageId
    }

    /// Stops the messages of `topic` (the same filter that was subscribed), in a persistent session too.
    public func unsubscribe(_ topic: String) throws(MQTTError) {
        try check(mosquitto_unsubscribe(handle, nil, topic), "cannot unsubscribe from \(topic)")
    }

    /// Queues `payload` for `topic` and returns its message id (see ``Event/published(messageId:)``).
    @discardableResult
    public func publish(_ payload: [UInt8], topic: String, qos: Int32 = 1, retain: Bool = false) throws(MQTTError)
        -> Int32
    {
        var messageId: Int32 = 0
        let rc = payload.withUnsafeBytes {
            mosquitto_publish(handle, &messageId, topic, Int32($0.count), $0.baseAddress, qos, retain)
        }
        try check(rc, "cannot publish to \(topic)")
        return messageId
    }

    /// One round of network traffic, waiting at most `timeout` for it.
    public func loop(timeout: Duration = .milliseconds(200)) throws(MQTTError) {
        try check(mosquitto_loop(handle, Int32(timeout.milliseconds), 1), "connection failed")
    }

    private func check(_ rc: Int32, _ what: String) throws(MQTTError) {
        guard rc != MOSQ_ERR_SUCCESS.rawValue else { return }
        // errno first: anything called after may change it.
        let reason =
            rc == MOSQ_ERR_ERRNO.rawValue ? String(cString: strerror(errno)) : String(cString: mosquitto_strerror(rc))
        let kind: MQTTError.Kind =
            switch rc {
            case MOSQ_ERR_NO_CONN.rawValue, MOSQ_ERR_CONN_LOST.rawValue: .notConnected
            case MOSQ_ERR_CONN_REFUSED.rawValue: .refused
            case MOSQ_ERR_TLS.rawValue: .tls
            default: .transport
            }
        throw MQTTError(kind, "\(what): \(reason)", reason: reason)
    }
}
