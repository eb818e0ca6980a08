internal import CMosquitto
@preconcurrency import Dispatch
import Glibc
import RCCore

/// The MQTT push channel (SPEC §6): the Linux counterpart of the FCM `PUSH_RC` topic. It
/// subscribes to `MQTTTopic` and `MQTTTopic/<deviceId>` with QoS 1 on a persistent session
/// (client id = device id, clean session off), so pings published while the device was offline
/// arrive when it reconnects. Payloads are the FCM-style messages the socket takes and go through
/// the same handler; the refetch waits a random `Jitter`. libmosquitto's own thread runs the
/// network loop and reconnects with exponential backoff; every reconnect refetches once.
final class MQTTChannel: @unchecked Sendable {
    private let handle: OpaquePointer
    private let agent: Agent
    private let log: Logger
    private let topics: [String]
    private let jitter: Duration
    private let host: String
    private let port: Int32
    private let lock = NSLockLite()
    private var connected = false
    private var everConnected = false
    private var stopped = false
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    /// What the connection did, in the order libmosquitto's thread saw it: one task hands it to the
    /// agent, so `status` never shows an older state after a newer one ("connecting" after
    /// "connected" when a task per callback raced).
    private let events: AsyncStream<ConnectionEvent>
    private let eventInput: AsyncStream<ConnectionEvent>.Continuation
    private var delivery: Task<Void, Never>?

    private enum ConnectionEvent: Sendable {
        case state(String)
        /// Connected (`first`: for the first time since start): a ping may have been missed.
        case connected(state: String, first: Bool)
    }

    struct SetupError: Error, CustomStringConvertible {
        let description: String
    }

    private static let initialized: Bool = { mosquitto_lib_init() == MOSQ_ERR_SUCCESS.rawValue }()

    init(config: AgentConfig, deviceId: String, agent: Agent, log: Logger) throws(SetupError) {
        _ = Self.initialized
        guard let url = config.mqtt, let (tls, host, port) = MQTTAddress.parse(url) else {
            throw SetupError(description: "[Push] MQTT= is not an mqtt:// or mqtts:// URL")
        }
        self.agent = agent
        self.log = log
        (events, eventInput) = AsyncStream.makeStream()
        self.host = host
        self.port = port
        jitter = config.jitter
        topics = [config.mqttTopic, config.mqttTopic + "/" + deviceId]
        guard let handle = mosquitto_new(deviceId, false, nil) else {
            throw SetupError(description: "cannot create an MQTT client: \(String(cString: strerror(errno)))")
        }
        self.handle = handle
        mosquitto_user_data_set(handle, Unmanaged.passUnretained(self).toOpaque())
        if let username = config.mqttUsername {
            var password: String?
            if let file = config.mqttPasswordFile {
                guard let bytes = try? FileBytes.read(file, limit: 64 << 10, symlinks: .trustedOwners) else {
                    mosquitto_destroy(handle)
                    throw SetupError(description: "cannot read MQTTPasswordFile=\(file)")
                }
                password = String(decoding: bytes, as: UTF8.self).trimmingSpaces().description
            }
            mosquitto_username_pw_set(handle, username, password)
        }
        if tls {
            // libmosquitto fopen()s the CA file itself: a FIFO there would block this thread for good.
            if let caFile = config.mqttCAFile {
                do { try FileBytes.checkRegularFile(caFile) } catch {
                    mosquitto_destroy(handle)
                    throw SetupError(description: "cannot use MQTTCAFile=: \(error)")
                }
            }
            let rc = mosquitto_tls_set(
                handle, config.mqttCAFile, config.mqttCAFile == nil ? "/etc/ssl/certs" : nil, nil, nil, nil)
            guard rc == MOSQ_ERR_SUCCESS.rawValue else {
                mosquitto_destroy(handle)
                throw SetupError(description: "cannot set up MQTT TLS: \(String(cString: mosquitto_strerror(rc)))")
            }
        }
        // libmosquitto's own reconnect inside its loop: 1 s growing to 60 s.
        mosquitto_reconnect_delay_set(handle, 1, 60, true)
        mosquitto_connect_callback_set(handle) { _, context, rc in
            Unmanaged<MQTTChannel>.fromOpaque(context!).takeUnretainedValue().didConnect(rc)
        }
        mosquitto_disconnect_callback_set(handle) { _, context, rc in
            Unmanaged<MQTTChannel>.fromOpaque(context!).takeUnretainedValue().didDisconnect(rc)
        }
        mosquitto_message_callback_set(handle) { _, context, message in
            guard let context, let message else { return }
            let payload =
                message.pointee.payload.map {
                    Array(UnsafeRawBufferPointer(start: $0, count: Int(message.pointee.payloadlen)))
                } ?? []
            let topic = message.pointee.topic.map { String(cString: $0) } ?? "?"
            Unmanaged<MQTTChannel>.fromOpaque(context).takeUnretainedValue().didReceive(payload, topic: topic)
        }
    }

    deinit {
        mosquitto_destroy(handle)
    }

    /// Starts the network thread: it connects, runs libmosquitto's loop, and whenever the loop
    /// gives up (broker refused or gone, TLS failure) waits 1 s doubling to 60 s, ±50% jitter so a
    /// fleet does not reconnect in step, and tries again, until ``stop()``.
    func start() {
        let (agent, jitter, events) = (agent, jitter, events)
        delivery = Task {
            for await event in events {
                switch event {
                case let .state(state): await agent.setPushState(state)
                case let .connected(state, first):
                    await agent.setPushState(state)
                    // A ping may have been missed while disconnected (at start too: the broker may hold none).
                    if first {
                        await agent.request(.pushReconnect)
                    } else {
                        await agent.requestAfterJitter(.pushReconnect, jitter: jitter)
                    }
                }
            }
        }
        eventInput.yield(.state("mqtt \(host):\(port) connecting"))
        DetachedThread.start { [self] in
            networkLoop()
            finished.signal()
        }
    }

    func stop() {
        lock.withLock { stopped = true }
        mosquitto_disconnect(handle)
        wake.signal()
        // The thread must be done with the handle before `deinit` destroys it.
        _ = finished.wait(timeout: .now() + .seconds(3))
        eventInput.finish()
        delivery?.cancel()
    }

    /// After ``stop()``: waits until the states already sent have reached the agent, then takes the
    /// channel out of `status`, so a reload that removes or replaces it leaves no state behind (a
    /// removed channel showed "disconnected, reconnecting" until the daemon restarted).
    func clearState() async {
        await delivery?.value
        await agent.setPushState(nil)
    }

    /// Takes this channel's topics out of its persistent session (a reload moves to others). Sent
    /// before the disconnect that ``stop()`` sends; without a connection there is nothing to undo
    /// now, and the next connect of a channel with other topics does not subscribe these again.
    func unsubscribe() {
        for topic in topics { mosquitto_unsubscribe(handle, nil, topic) }
    }

    private var isStopped: Bool { lock.withLock { stopped } }

    private func networkLoop() {
        var failures = 0
        var rc = mosquitto_connect(handle, host, port, 60)
        while !isStopped {
            if rc == MOSQ_ERR_SUCCESS.rawValue {
                // Reconnects after a lost connection by itself; returns on errors it will not retry.
                rc = mosquitto_loop_forever(handle, 1_000, 1)
                if isStopped { return }
                if lock.withLock({ everConnected }) { failures = 0 }
            }
            failures += 1
            let base = Double(min(1 << min(failures - 1, 6), 60))
            let delay = base * Double.random(in: 0.5...1.5)
            if failures == 1 || failures.isMultiple(of: 10) {
                log.warning(
                    "Failed to keep the MQTT connection to \(host):\(port): \(Self.describe(rc)); retrying in \(Int(delay.rounded()))s"
                )
            }
            _ = wake.wait(timeout: .now() + .milliseconds(Int(delay * 1_000)))
            if isStopped { return }
            rc = mosquitto_reconnect(handle)
        }
    }

    private static func describe(_ rc: Int32) -> String {
        rc == MOSQ_ERR_ERRNO.rawValue ? String(cString: strerror(errno)) : String(cString: mosquitto_strerror(rc))
    }

    private func didConnect(_ rc: Int32) {
        guard rc == 0 else {
            log.warning(
                "MQTT broker \(host):\(port) refused the connection: \(String(cString: mosquitto_connack_string(rc)))")
            return
        }
        for topic in topics { mosquitto_subscribe(handle, nil, topic, 1) }
        let first = lock.withLock {
            defer { connected = true; everConnected = true }
            return !everConnected
        }
        log.info("MQTT connected to \(host):\(port), subscribed to \(topics.joined(separator: ", "))")
        eventInput.yield(
            .connected(state: "mqtt \(host):\(port) connected, topics \(topics.joined(separator: ", "))", first: first))
    }

    private func didDisconnect(_ rc: Int32) {
        let wasConnected = lock.withLock {
            defer { connected = false }
            return connected
        }
        if wasConnected && !isStopped {
            log.warning(
                "MQTT connection to \(host):\(port) lost (\(String(cString: mosquitto_strerror(rc)))); reconnecting")
        }
        eventInput.yield(.state("mqtt \(host):\(port) disconnected, reconnecting"))
    }

    private func didReceive(_ payload: [UInt8], topic: String) {
        let message: PushMessage
        do {
            message = try PushMessage.parse(try JSONValue.parse(payload))
        } catch {
            let shown = String(decoding: payload.prefix(120), as: UTF8.self)
            log.warning("Ignoring an MQTT message on \(topic): \(error) (payload: \(shown))")
            return
        }
        let agent = agent
        let jitter = jitter
        let log = log
        Task {
            do {
                _ = try await agent.handle(message, from: "mqtt \(topic)", jitter: jitter)
            } catch {
                log.error("Failed to handle an MQTT message on \(topic): \(error)")
            }
        }
    }
}
