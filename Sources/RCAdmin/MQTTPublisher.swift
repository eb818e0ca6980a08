import Dispatch
import RCCore
import RCMQTT
import RCSystem
import Synchronization

/// Publishes one message at QoS 1 and returns once the broker acknowledged it (PUBACK): rcadmin's
/// `notify-stale --mqtt`, on RCMQTT's client.
enum MQTTPublisher {
    struct Failure: Error, CustomStringConvertible {
        let description: String
        /// The broker could not be reached or did not answer (worth trying again later), as
        /// opposed to a bad URL, an unreadable file or a broker that refused the client.
        var unreachable = false
    }

    /// Connects (MQTT 5, or 3.1.1 to a broker that refuses it: ``MQTTSession``), publishes once
    /// connected and returns on the broker's PUBACK. Blocks: call it from a thread of its own. No
    /// reconnect: the first failed or lost connection ends it (the relay tries again later).
    static func publish(
        url: String, topic: String, payload: String, login: MQTTLogin, timeout: Duration = .seconds(30)
    ) throws(Failure) {
        guard let (tls, host, port) = MQTTAddress.parse(url) else {
            throw Failure(description: "not an mqtt:// or mqtts:// URL: \(TextEscaping.terminal(url))")
        }
        var options = try login.clientOptions(tls: tls)
        options.threaded = true  // the session's thread runs the loop; the publish comes from its event
        let client: MQTTClient
        do { client = try MQTTClient(options) } catch { throw Failure(description: error.description) }
        var configuration = MQTTSession.Configuration(brokers: [MQTTBroker(host: host, port: port)])
        configuration.keepAlive = 30
        configuration.loopTimeout = .milliseconds(200)
        let session = MQTTSession(client: client, configuration)
        // What the broker said, from the session's thread.
        let outcome = Outcome()
        let bytes = Array(payload.utf8)
        session.onEvent { [unowned session] event in
            switch event {
            case .connected:
                do throws(MQTTError) {
                    outcome.sent(try session.publish(bytes, topic: topic, qos: 1, retain: false))
                } catch {
                    outcome.set(.failed("cannot publish to \(topic): \(error.reason)", connected: true))
                }
            case let .published(messageId): outcome.acknowledged(messageId)
            case let .refused(_, reason): outcome.set(.refused(reason))
            case let .failed(_, reason, lost, _, _, _): outcome.set(.failed(reason, connected: lost))
            default: break
            }
        }
        guard session.start() else { throw Failure(description: "cannot start a thread for the MQTT connection") }
        defer { session.stop() }  // on this thread, which is the caller's own
        switch outcome.wait(timeout) {
        case .acknowledged?: return
        case let .refused(reason)?:
            throw Failure(description: "\(host):\(port) refused the connection: \(reason)")
        case let .failed(reason, connected)?:
            throw Failure(
                description: connected
                    ? "connection to \(host):\(port) failed: \(reason)"
                    : "cannot connect to \(host):\(port): \(reason)",
                unreachable: true)
        case nil:
            throw Failure(
                description: "the broker did not acknowledge the message within \(DurationText.format(timeout))",
                unreachable: true)
        }
    }

    private enum Answer {
        case acknowledged
        case refused(String)
        case failed(String, connected: Bool)
    }

    /// The broker's first answer, set from the session's thread, waited for on the caller's.
    private final class Outcome: Sendable {
        private struct State {
            var answer: Answer?
            var messageId: Int32?
            var acknowledged: Set<Int32> = []
        }
        private let state = Mutex(State())
        private let answered = DispatchSemaphore(value: 0)

        func set(_ value: Answer) {
            let first = state.withLock { state in
                guard state.answer == nil else { return false }
                state.answer = value
                return true
            }
            if first { answered.signal() }
        }

        /// The publish was queued with this id (its PUBACK may have come already).
        func sent(_ messageId: Int32) {
            let done = state.withLock { state in
                state.messageId = messageId
                return state.acknowledged.contains(messageId)
            }
            if done { set(.acknowledged) }
        }

        func acknowledged(_ messageId: Int32) {
            let done = state.withLock { state in
                state.acknowledged.insert(messageId)
                return state.messageId == messageId
            }
            if done { set(.acknowledged) }
        }

        func wait(_ timeout: Duration) -> Answer? {
            _ = answered.wait(timeout: .now() + .milliseconds(Int(timeout.milliseconds)))
            return state.withLock { $0.answer }
        }
    }
}
