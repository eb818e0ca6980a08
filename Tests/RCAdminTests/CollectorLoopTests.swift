import Foundation
import RCMQTT
import TestSupport
import Testing

@testable import RCAdmin

/// `fleet status` reads reports on its own thread while ``CollectorLoop`` runs the network loop:
/// however long the reading takes (100,000 costly reports), the keepalive goes on.
@Suite struct CollectorLoopTests {
    @Test func aReaderBusyForLongerThanTheKeepaliveKeepsTheConnection() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("collector-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let broker = try Mosquitto(in: directory)
        var options = MQTTClient.Options()
        options.threaded = true
        var configuration = MQTTSession.Configuration(brokers: [MQTTBroker(host: "127.0.0.1", port: Int32(broker.port))]
        )
        // mosquitto drops a client it has not heard from in 1.5 keepalives: 7.5 s here (5 s is
        // libmosquitto's least).
        configuration.keepAlive = 5
        configuration.maximumBacklog = CollectorLoop.maximumBacklog
        let session = MQTTSession(client: try MQTTClient(options), configuration)
        let loop = CollectorLoop(session: session)
        #expect(loop.start())
        var items: [CollectorLoop.Item] = []
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline, !items.contains(where: { if case .connected = $0 { true } else { false } }) {
            items += loop.take(waiting: .milliseconds(100))
        }
        #expect(items.contains { if case .connected = $0 { true } else { false } })
        // The reader is busy (this is the work being simulated, not a wait for an event) for twice
        // the keepalive. When the loop ran between the reader's rounds, this lost the
        // connection.
        Thread.sleep(forTimeInterval: 10)
        let during = loop.take(waiting: .zero)
        #expect(
            !during.contains {
                switch $0 {
                case .failed, .disconnected: true
                default: false
                }
            }, "\(during)")
        // And the connection carries messages still.
        _ = try session.subscribe("t", qos: 0)
        var received = false
        let until = Date().addingTimeInterval(10)
        var published = false
        while Date() < until, !received {
            for item in loop.take(waiting: .milliseconds(100)) {
                switch item {
                case .subscribed:
                    _ = try session.publish(Array("hello".utf8), topic: "t", qos: 1, retain: false)
                    published = true
                case let .message(topic, payload):
                    received = payload == Array("hello".utf8)
                    loop.consumed(topic: topic, payload: payload)
                default: break
                }
            }
        }
        #expect(published && received)
        loop.stop()
    }
}
