@preconcurrency import Dispatch
import Foundation
import Glibc
import RCCore
import RCMQTT
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
        #expect(
            DetachedThread.start {
                do throws(MQTTError) { try subscriber.loopForever() } catch { loopError.set(error) }
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
        subscriber.disconnect()
        #expect(loopEnded.wait(timeout: .now() + .seconds(10)) == .success)
        #expect(loopError.error == nil, "the loop ended with an error, not as asked")
    }

    @Test func aBrokerThatIsNotThereIsATypedErrorSayingWhy() throws {
        let client = try MQTTClient(MQTTClient.Options())
        let port = try Broker.freePort()
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

/// A real mosquitto listening on a free loopback port (mosquitto's own default configuration:
/// loopback only, anonymous clients allowed), stopped by its pid.
private final class Broker {
    let port: Int32
    private let process = Process()

    init() throws {
        port = try Self.freePort()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/mosquitto")
        process.arguments = ["-p", String(port)]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Connects `client`, retrying while the broker starts up (connection refused) for up to 10 s.
    func connect(_ client: MQTTClient) throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            let failure: MQTTError
            do throws(MQTTError) {
                try client.connect(host: "127.0.0.1", port: port)
                return
            } catch {
                failure = error
            }
            guard failure.reason == "Connection refused", ContinuousClock.now < deadline, process.isRunning else {
                throw failure
            }
            usleep(20_000)  // the broker is not listening yet: nothing to wait on but time
        }
    }

    static func freePort() throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { throw TestFailure("no free port") }
        return Int32(UInt16(bigEndian: address.sin_port))
    }
}
