@preconcurrency import Dispatch
import RCCore
import RCMQTT
import RCSystem
import Synchronization
import Testing

/// ``MQTTSession`` driven by a scripted client (``FakeMQTTClient``): the rotation, the backoff, the
/// version fallback, the subscription retries and the stop, each shown by what the session asked
/// the client for and what it reported. Waits are in milliseconds and un-jittered here.
/// Time-limited: its async tests wait on gates, continuations or peers, and a hang must fail, not block CI.
@Suite(.timeLimit(.minutes(10))) struct MQTTSessionTests {
    static let brokers = [MQTTBroker(host: "a", port: 1883), MQTTBroker(host: "b", port: 1884)]

    /// A session over `client` with short, un-jittered waits (`configure` changes more), its events
    /// logged.
    func session(
        _ client: FakeMQTTClient, brokers: [MQTTBroker] = Self.brokers,
        configure: (inout MQTTSession.Configuration) -> Void = { _ in }
    ) -> (MQTTSession, SessionLog) {
        var configuration = MQTTSession.Configuration(brokers: brokers)
        configuration.reconnectBase = .milliseconds(5)
        configuration.reconnectCap = .milliseconds(20)
        configuration.subscriptionBase = .milliseconds(5)
        configuration.subscriptionCap = .milliseconds(20)
        configuration.jitter = { $0 }
        configuration.loopTimeout = .milliseconds(5)
        configure(&configuration)
        let session = MQTTSession(client: client, configuration)
        let log = SessionLog()
        session.onEvent { log.append($0) }
        return (session, log)
    }

    @Test func aBrokerThatIsDownIsSkippedAtOnceForTheNext() throws {
        let client = FakeMQTTClient([.unreachable, .accept])
        let (session, log) = session(client)
        #expect(session.start())
        defer { session.stop() }
        #expect(log.wait { $0.contains { if case .connected(Self.brokers[1]) = $0 { true } else { false } } })
        #expect(client.connects.map(\.host) == ["a", "b"])
        let failed = log.all.compactMap {
            if case let .failed(b, _, lost, next, wait, logged) = $0 { (b, lost, next, wait, logged) } else { nil }
        }
        #expect(failed.count == 1)
        #expect(failed.first?.0 == Self.brokers[0] && failed.first?.2 == Self.brokers[1])
        #expect(failed.first?.3 == .zero && failed.first?.1 == false && failed.first?.4 == true)
        #expect(session.currentBroker == Self.brokers[1])
    }

    @Test func aFullRoundOfFailuresBacksOffDoublingToTheCap() throws {
        let client = FakeMQTTClient([.unreachable])
        let (session, log) = session(client)
        #expect(session.start())
        defer { session.stop() }
        #expect(log.wait { $0.filter { if case .failed = $0 { true } else { false } }.count >= 8 })
        let waits = log.all.compactMap { if case let .failed(_, _, _, _, wait, _) = $0 { wait } else { nil } }
        #expect(
            Array(waits.prefix(8)) == [
                .zero, .milliseconds(5), .zero, .milliseconds(10), .zero, .milliseconds(20), .zero, .milliseconds(20),
            ])
        #expect(client.connects.prefix(4).map(\.host) == ["a", "b", "a", "b"])
    }

    @Test func aLostConnectionMovesOnAndTheNextConnectStartsARound() throws {
        let client = FakeMQTTClient([.accept])
        let (session, log) = session(client)
        #expect(session.start())
        defer { session.stop() }
        #expect(log.wait { $0.contains { if case .connected(Self.brokers[0]) = $0 { true } else { false } } })
        client.lose()
        #expect(log.wait { $0.contains { if case .connected(Self.brokers[1]) = $0 { true } else { false } } })
        let lost = log.all.compactMap {
            if case let .failed(b, _, lost, next, wait, logged) = $0 { (b, lost, next, wait, logged) } else { nil }
        }
        #expect(
            lost.first.map { $0.0 == Self.brokers[0] && $0.1 && $0.2 == Self.brokers[1] && $0.3 == .zero && $0.4 }
                == true)
        #expect(log.all.contains { if case .disconnected(Self.brokers[0]) = $0 { true } else { false } })
    }

    @Test func aBrokerRefusingMQTT5IsAskedAgainIn311AtOnceAndForGood() throws {
        let client = FakeMQTTClient([.acceptOnly311])
        let (session, log) = session(client, brokers: [Self.brokers[0]])
        #expect(session.start())
        defer { session.stop() }
        #expect(log.wait { $0.contains { if case .connected = $0 { true } else { false } } })
        client.lose()
        #expect(log.wait { $0.filter { if case .connected = $0 { true } else { false } }.count == 2 })
        #expect(client.connects.map(\.version) == [.v5, .v311, .v311])
        #expect(log.all.filter { if case .fellBack = $0 { true } else { false } }.count == 1)
        // Neither a failure nor a refusal: the fallback is not a wait.
        #expect(!log.all.contains { if case .refused = $0 { true } else { false } })
        #expect(log.all.filter { if case .failed = $0 { true } else { false } }.count == 1)  // the loss only
    }

    @Test func theFallbackIsPerBroker() throws {
        // a: refuses MQTT 5; b: takes it.
        let client = FakeMQTTClient([.acceptOnly311, .accept])
        let (session, log) = session(client)
        #expect(session.start())
        defer { session.stop() }
        #expect(log.wait { $0.contains { if case .connected(Self.brokers[0]) = $0 { true } else { false } } })
        client.lose()
        #expect(log.wait { $0.contains { if case .connected(Self.brokers[1]) = $0 { true } else { false } } })
        #expect(client.connects.map(\.version) == [.v5, .v311, .v5])
    }

    @Test func aPlainRefusalIsReportedAndRotatesLikeAFailure() throws {
        let client = FakeMQTTClient([.refuse("Not authorized"), .accept])
        let (session, log) = session(client)
        #expect(session.start())
        defer { session.stop() }
        #expect(log.wait { $0.contains { if case .connected(Self.brokers[1]) = $0 { true } else { false } } })
        #expect(log.all.contains { if case .refused(Self.brokers[0], "Not authorized") = $0 { true } else { false } })
        #expect(client.connects.map(\.version) == [.v5, .v5])
    }

    @Test func theTopicsAreAskedForOnEveryConnectAndARefusalIsRetried() throws {
        let client = FakeMQTTClient([.accept], refusing: ["t/1": 2])
        let (session, log) = session(client, brokers: [Self.brokers[0]])
        session.setSubscriptions(["t", "t/1"])
        #expect(session.start())
        defer { session.stop() }
        #expect(log.wait { $0.contains { if case .subscriptionGranted("t/1", _, 2) = $0 { true } else { false } } })
        let refused = log.all.compactMap {
            if case let .subscriptionRefused(_, _, n, wait, logged) = $0 { (n, wait, logged) } else { nil }
        }
        #expect(refused.map(\.0) == [1, 2])
        #expect(refused.map(\.1) == [.milliseconds(5), .milliseconds(10)])
        #expect(refused.map(\.2) == [true, false])
        #expect(log.all.contains { if case .subscriptionGranted("t", _, 0) = $0 { true } else { false } })
        // A new connection asks for both again, with no refusal counted.
        client.lose()
        #expect(
            log.wait { $0.filter { if case .subscriptionGranted("t", _, 0) = $0 { true } else { false } }.count == 2 })
        #expect(client.subscribes.filter { $0 == "t" }.count == 2)
    }

    @Test func anOwnSubscriptionIsHandedBackAsIs() throws {
        let client = FakeMQTTClient([.accept], refusing: ["x": 1])
        let (session, log) = session(client, brokers: [Self.brokers[0]])
        #expect(session.start())
        defer { session.stop() }
        #expect(log.wait { $0.contains { if case .connected = $0 { true } else { false } } })
        let id = try session.subscribe("x")
        #expect(log.wait { $0.contains { if case .subscribed(id, true) = $0 { true } else { false } } })
        // Not retried: the owner decides.
        #expect(client.subscribes == ["x"])
    }

    @Test func theWillIsSetBeforeEveryConnect() throws {
        let client = FakeMQTTClient([.unreachable, .accept])
        let (session, log) = session(client)
        let will = MQTTClient.Will(topic: "r/d", payload: Array("offline".utf8))
        session.setWill(will)
        #expect(session.start())
        defer { session.stop() }
        #expect(log.wait { $0.contains { if case .connected = $0 { true } else { false } } })
        #expect(client.wills == [will, will])
    }

    @Test func stopEndsTheThreadAndAWaitBetweenRounds() async throws {
        let client = FakeMQTTClient([.unreachable])
        let (session, log) = session(client, brokers: [Self.brokers[0]]) {
            $0.reconnectBase = .seconds(600)
            $0.reconnectCap = .seconds(600)
        }
        #expect(session.start())
        #expect(log.wait { $0.contains { if case .failed = $0 { true } else { false } } })
        // Waiting ten minutes now; the stop wakes it (off the cooperative pool) and the thread ends
        // within the stop's bound of 3 s, not after the wait.
        #expect(await session.shutDown())
        #expect(client.connects.count == 1)
    }

    /// A session with a 10-byte backlog gets `first`, then a second message: the second is read
    /// only once the owner consumed the first.
    private func expectTheNextMessageWaits(after first: [UInt8]) {
        let client = FakeMQTTClient([.accept])
        let (session, log) = session(client, brokers: [Self.brokers[0]]) { $0.maximumBacklog = 10 }
        #expect(session.start())
        defer { session.stop() }
        func messages(_ events: [MQTTSession.Event]) -> Int {
            events.filter { if case .message = $0 { true } else { false } }.count
        }
        #expect(log.wait { $0.contains { if case .connected = $0 { true } else { false } } })
        client.deliver(topic: "m", payload: first)
        #expect(log.wait { messages($0) == 1 })
        client.deliver(topic: "m", payload: [2])
        // Not read while the first is outstanding: the second comes only once the first is consumed.
        #expect(!log.wait(timeout: .milliseconds(200)) { messages($0) == 2 })
        session.consumed(topic: "m", payload: first)
        #expect(log.wait { messages($0) == 2 })
    }

    @Test func messagesPastTheBacklogWaitForTheOwner() throws {
        expectTheNextMessageWaits(after: Array(repeating: 1, count: 11))
    }

    /// Empty messages count too (their topic and the event's own share): a flood of them used to
    /// count nothing against the backlog, so the queue in front of a slow owner grew without bound.
    @Test func emptyMessagesCountAgainstTheBacklog() throws {
        expectTheNextMessageWaits(after: [])
    }
}

/// The session's events, appended on its thread and waited for on the test's.
final class SessionLog: Sendable {
    private let events = Mutex<[MQTTSession.Event]>([])
    private let arrived = DispatchSemaphore(value: 0)

    func append(_ event: MQTTSession.Event) {
        events.withLock { $0.append(event) }
        arrived.signal()
    }

    var all: [MQTTSession.Event] { events.withLock { $0 } }

    /// Whether `condition` held within `timeout`, checked on every event.
    func wait(timeout: Duration = .seconds(10), _ condition: ([MQTTSession.Event]) -> Bool) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !condition(all) {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return false }
            _ = arrived.wait(timeout: .now() + .milliseconds(Int(min(left, .milliseconds(100)).milliseconds)))
        }
        return true
    }
}
