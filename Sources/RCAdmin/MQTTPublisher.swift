import RCCore
import RCMQTT
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

    /// The password in `path` (``MQTTPassword``: the daemon's reading), `nil` without a file.
    static func password(fromFile path: String?) throws(Failure) -> String? {
        guard let path else { return nil }
        do { return try MQTTPassword.read(fromFile: path) } catch {
            throw Failure(description: TextEscaping.terminal(error.description))
        }
    }

    static func publish(
        url: String, topic: String, payload: String, login: MQTTLogin, timeout: Duration = .seconds(30)
    ) throws(Failure) {
        guard let (tls, host, port) = MQTTAddress.parse(url) else {
            throw Failure(description: "not an mqtt:// or mqtts:// URL: \(TextEscaping.terminal(url))")
        }
        let options = try login.clientOptions(tls: tls)
        let client: MQTTClient
        do { client = try MQTTClient(options) } catch { throw Failure(description: error.description) }
        // What the broker said, from the event handler (which runs inside `loop`, on this thread).
        let outcome = Outcome()
        client.onEvent { [unowned client] event in
            switch event {
            case .published:
                outcome.set(.acknowledged)
                client.disconnect()  // the loop below then ends
            case let .refused(reason, _): outcome.set(.refused(reason))
            default: break
            }
        }
        do {
            try client.connect(host: host, port: port, keepAlive: 30)
            try client.publish(Array(payload.utf8), topic: topic, qos: 1)
        } catch {
            throw Failure(description: error.description, unreachable: true)
        }
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            var failure: MQTTError?
            do { try client.loop(timeout: .milliseconds(200)) } catch { failure = error }
            switch outcome.value {
            case .acknowledged?: return
            case let .refused(reason)?: throw Failure(description: "\(host):\(port) refused the connection: \(reason)")
            case nil:
                if let failure {
                    throw Failure(
                        description: "connection to \(host):\(port) failed: \(failure.reason)", unreachable: true)
                }
            }
        }
        throw Failure(
            description: "the broker did not acknowledge the message within \(DurationText.format(timeout))",
            unreachable: true)
    }

    private enum Answer {
        case acknowledged
        case refused(String)
    }

    /// The broker's first answer, set from the event handler.
    private final class Outcome: Sendable {
        private let answer = Mutex<Answer?>(nil)
        func set(_ value: Answer) { answer.withLock { if $0 == nil { $0 = value } } }
        var value: Answer? { answer.withLock { $0 } }
    }
}
