@preconcurrency import Dispatch
import Foundation
import Glibc
import RCCore
import RCMQTT
import RCSystem
import Synchronization
import TestSupport
import Testing

/// RCMQTT's client against a real mosquitto on a free loopback port: what the daemon's push channel
/// and rcadmin's publisher rely on (connect, subscribe, publish at QoS 1, the loop, the events).
@Suite struct MQTTClientTests {
    @Test func aMessagePublishedAtQoS1ReachesASubscriberByteForByte() throws {
        let broker = try Broker()
        defer { broker.stop() }

        let subscriber = try MQTTClient(MQTTClient.Options(clientId: "rcnetwork-sub-\(getpid())"))
        let heard = EventLog()
        subscriber.onEvent { [unowned subscriber] event in
            if case .connected = event { _ = try? subscriber.subscribe("rc/#", qos: 1) }
            heard.append(event)
        }
        try broker.connect(subscriber)
        let loopEnded = DispatchSemaphore(value: 0)
        let loopError = LoopResult()
        let disconnecting = Mutex(false)
        #expect(
            DetachedThread.start {
                // Until disconnect() from another thread: the loop then reports the end (the
                // disconnect event, or "not connected" once the socket is closed).
                do throws(MQTTError) {
                    while !heard.all.contains(where: { if case .disconnected = $0 { true } else { false } }) {
                        try subscriber.loop(timeout: .milliseconds(200))
                    }
                } catch {
                    if !(disconnecting.withLock { $0 } && error.kind == .notConnected) { loopError.set(error) }
                }
                loopEnded.signal()
            })
        #expect(heard.wait { $0.contains { if case .subscribed = $0 { true } else { false } } }, "\(heard.all)")

        // Bytes no text would carry: the payload is copied out of libmosquitto's buffer whole.
        let payload: [UInt8] = [0, 1, 2, 0xFF] + Array("{\"data\":{}}".utf8)
        let publisher = try MQTTClient(MQTTClient.Options())
        let acknowledged = EventLog()
        publisher.onEvent { acknowledged.append($0) }
        try broker.connect(publisher)
        let messageId = try publisher.publish(payload, topic: "rc/device-1", qos: 1)
        let deadline = ContinuousClock.now + .seconds(10)
        while !acknowledged.all.contains(where: { if case .published(messageId) = $0 { true } else { false } }),
            ContinuousClock.now < deadline
        {
            try publisher.loop(timeout: .milliseconds(100))
        }
        #expect(acknowledged.all.contains { if case .published(messageId) = $0 { true } else { false } })

        #expect(
            heard.wait { events in
                events.contains { if case .message("rc/device-1", payload) = $0 { true } else { false } }
            }, "\(heard.all)")
        publisher.disconnect()
        // disconnect() from another thread ends the subscriber's loop cleanly.
        disconnecting.withLock { $0 = true }
        subscriber.disconnect()
        #expect(loopEnded.wait(timeout: .now() + .seconds(10)) == .success)
        #expect(loopError.error == nil, "the loop ended with an error, not as asked")
    }

    @Test func aBrokerThatIsNotThereIsATypedErrorSayingWhy() throws {
        let client = try MQTTClient(MQTTClient.Options())
        let refusing = try RefusingPort()
        defer { withExtendedLifetime(refusing) {} }  // held until the test ends
        let port = Int32(refusing.port)
        #expect {
            try client.connect(host: "127.0.0.1", port: port)
        } throws: { error in
            guard let error = error as? MQTTError else { return false }
            return error.reason == "Connection refused"
                && error.message.hasPrefix("cannot connect to 127.0.0.1:\(port)")
        }
    }

    /// libmosquitto opens the CA file itself, blocking: a FIFO there would hang the caller for good.
    /// Refused many times over: the handle of a refused client is destroyed exactly once (a throw after
    /// the last stored property was set ran `deinit` too, and a second mosquitto_destroy corrupted
    /// the heap).
    @Test func aCAFileThatIsNotARegularFileIsRefusedBeforeLibmosquittoOpensIt() throws {
        try TemporaryDirectory.with { directory in
            let fifo = directory.file("ca.pem")
            #expect(mkfifo(fifo, 0o600) == 0)
            var options = MQTTClient.Options(clientId: "rcnetwork-fifo")
            options.tls = true
            options.caFile = fifo
            for _ in 0..<200 {
                #expect {
                    _ = try MQTTClient(options)
                } throws: { error in
                    (error as? MQTTError)?.kind == .tls && "\(error)".contains(fifo)
                }
            }
        }
    }
}

/// How the subscriber's loop ended, set on its thread.
private final class LoopResult: Sendable {
    private let failure = Mutex<String?>(nil)
    func set(_ error: MQTTError) { failure.withLock { $0 = error.description } }
    var error: String? { failure.withLock { $0 } }
}

/// The client's events, appended on the loop's thread and waited for on the test's.
private final class EventLog: Sendable {
    private let events = Mutex<[MQTTClient.Event]>([])
    private let arrived = DispatchSemaphore(value: 0)

    func append(_ event: MQTTClient.Event) {
        events.withLock { $0.append(event) }
        arrived.signal()
    }

    var all: [MQTTClient.Event] { events.withLock { $0 } }

    /// Waits until `condition` holds for the events so far (false after `timeout`): woken by each event.
    func wait(timeout: Duration = .seconds(10), _ condition: ([MQTTClient.Event]) -> Bool) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !condition(all) {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return false }
            _ = arrived.wait(timeout: .now() + .milliseconds(Int(left.milliseconds)))
        }
        return true
    }
}

/// TestSupport's real mosquitto in a directory of its own, removed with it.
private final class Broker {
    let mosquitto: Mosquitto
    private let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("rcnetwork-\(UUID().uuidString)")
        mosquitto = try Mosquitto(in: directory)
    }

    var port: Int32 { Int32(mosquitto.port) }

    func stop() {
        mosquitto.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Connects `client` (the broker accepts connections once `Mosquitto` returned).
    func connect(_ client: MQTTClient) throws {
        try client.connect(host: "127.0.0.1", port: port)
    }
}
