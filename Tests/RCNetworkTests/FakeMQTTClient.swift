@preconcurrency import Dispatch
import RCMQTT
import RCSystem
import Synchronization

/// A scripted ``MQTTSessionClient`` for ``MQTTSession``'s tests: each connect takes the next
/// ``Attempt`` of the script (or, past its end, the last one), subscriptions are answered from a
/// per-topic list of refusals, and ``lose()`` ends the current connection as a lost network
/// would. It records what the session asked for (brokers, versions, subscriptions) for the tests.
final class FakeMQTTClient: MQTTSessionClient {
    /// What one connect does.
    enum Attempt: Sendable {
        /// The TCP connect fails (a broker down).
        case unreachable
        /// The CONNACK accepts.
        case accept
        /// The CONNACK refuses; `version`: for the protocol version, when the attempt was MQTT 5.
        case refuse(String, version: Bool = false)
        /// Accepts in 3.1.1, refuses MQTT 5 for its version (NATS).
        case acceptOnly311
    }

    struct Connect: Sendable, Equatable {
        let host: String
        let port: Int32
        let version: MQTTClient.ProtocolVersion
    }

    private struct State {
        var script: [Attempt]
        var handler: (@Sendable (MQTTClient.Event) -> Void)?
        var pending: [MQTTClient.Event] = []
        /// The loop fails once `pending` is delivered: the connection is over.
        var ending = false
        var connected = false
        var connects: [Connect] = []
        var subscribes: [String] = []
        var refusalsLeft: [String: Int] = [:]
        var nextId: Int32 = 0
        var wills: [MQTTClient.Will?] = []
    }
    private let state: Mutex<State>
    private let changed = DispatchSemaphore(value: 0)

    init(_ script: [Attempt], refusing refusals: [String: Int] = [:]) {
        state = Mutex(State(script: script, refusalsLeft: refusals))
    }

    var connects: [Connect] { state.withLock { $0.connects } }
    var subscribes: [String] { state.withLock { $0.subscribes } }
    var wills: [MQTTClient.Will?] { state.withLock { $0.wills } }

    /// The connection is lost: the next loop reports it and fails.
    func lose() {
        state.withLock { state in
            guard state.connected else { return }
            state.pending.append(.disconnected(reason: "The connection was lost."))
            state.ending = true
        }
        changed.signal()
    }

    /// A message arrives on the current connection.
    func deliver(topic: String, payload: [UInt8]) {
        state.withLock { $0.pending.append(.message(topic: topic, payload: payload)) }
        changed.signal()
    }

    func onEvent(_ handler: @escaping @Sendable (MQTTClient.Event) -> Void) { state.withLock { $0.handler = handler } }

    func setWill(_ will: MQTTClient.Will?) throws(MQTTError) { state.withLock { $0.wills.append(will) } }

    func connect(host: String, port: Int32, keepAlive: Int32, protocolVersion: MQTTClient.ProtocolVersion)
        throws(MQTTError)
    {
        let attempt = state.withLock { state -> Attempt in
            state.connects.append(Connect(host: host, port: port, version: protocolVersion))
            let attempt = state.script.count > 1 ? state.script.removeFirst() : state.script.first ?? .unreachable
            state.pending = []
            state.ending = false
            switch attempt {
            case .unreachable: break
            case .accept:
                state.pending = [.connected]
                state.connected = true
            case let .refuse(reason, version):
                state.pending = [.refused(reason, protocolVersion: version && protocolVersion == .v5)]
                state.ending = true
            case .acceptOnly311:
                if protocolVersion == .v5 {
                    state.pending = [.refused("Unsupported protocol version", protocolVersion: true)]
                    state.ending = true
                } else {
                    state.pending = [.connected]
                    state.connected = true
                }
            }
            return attempt
        }
        if case .unreachable = attempt {
            throw MQTTError(
                .transport, "cannot connect to \(host):\(port): Connection refused", reason: "Connection refused")
        }
    }

    func disconnect() {
        state.withLock { state in
            if state.connected { state.pending.append(.disconnected(reason: "No error")) }
            state.ending = true
        }
        changed.signal()
    }

    func loop(timeout: Duration) throws(MQTTError) {
        let (events, handler) = state.withLock { state in
            defer { state.pending = [] }
            return (state.pending, state.handler)
        }
        for event in events { handler?(event) }
        if state.withLock({ $0.ending && $0.pending.isEmpty }) {
            state.withLock { $0.connected = false }
            throw MQTTError(
                .notConnected, "connection failed: The connection was lost.", reason: "The connection was lost.")
        }
        if events.isEmpty { _ = changed.wait(timeout: .now() + .milliseconds(5)) }
    }

    func subscribe(_ topic: String, qos: Int32) throws(MQTTError) -> Int32 {
        state.withLock { state in
            state.nextId += 1
            state.subscribes.append(topic)
            let refuse = (state.refusalsLeft[topic] ?? 0) > 0
            if refuse { state.refusalsLeft[topic]! -= 1 }
            state.pending.append(
                .subscribed(messageId: state.nextId, grantedQoS: [refuse ? MQTTClient.refusedQoS : qos]))
            return state.nextId
        }
    }

    func unsubscribe(_ topic: String) throws(MQTTError) {}

    func publish(_ payload: [UInt8], topic: String, qos: Int32, retain: Bool) throws(MQTTError) -> Int32 {
        state.withLock { state in
            state.nextId += 1
            state.pending.append(.published(messageId: state.nextId))
            return state.nextId
        }
    }
}
