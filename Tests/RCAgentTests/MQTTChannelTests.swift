import RCCore
import RCMQTT
import RCService
import RCStore
import Testing

@testable import RCAgent

/// The MQTT push channel against a fake agent and a fake connection (no broker, no daemon): what
/// each connection event makes it ask of the agent, in order.
@Suite(.timeLimit(.minutes(10))) struct MQTTChannelTests {
    let broker = MQTTBroker(host: "broker.test", port: 1883)

    private func channel(_ target: FakePushTarget, _ connection: FakeMQTTConnection, jitter: Duration = .seconds(3))
        -> MQTTChannel
    {
        var config = AgentConfig()
        config.mqttTopic = "FLEET"
        config.jitter = jitter
        return MQTTChannel(
            config: config, deviceId: "dev1", connection: connection, agent: target, log: Logger { _ in })
    }

    private func ping(_ state: String) -> [UInt8] { Array("{\"data\":{\"CONFIG_STATE\":\"\(state)\"}}".utf8) }

    @Test func itSubscribesToTheFleetAndDeviceTopicsAndSaysItIsConnecting() async {
        let (target, connection) = (FakePushTarget(), FakeMQTTConnection())
        let channel = channel(target, connection)
        #expect(connection.subscriptions == ["FLEET", "FLEET/dev1"])
        let loop = Task { await channel.run() }
        #expect(await target.calls.next() == .state(.connecting(broker: "broker.test:1883")))
        loop.cancel()
        await loop.value
        // A channel that stops (a reload removed it) leaves no state behind.
        #expect(await target.calls.next() == .state(nil))
    }

    @Test func theFirstConnectFetchesAtOnceAndUnsubscribesTopicsNoLongerWanted() async {
        let target = FakePushTarget(notes: [.mqttTopics: "OLD\nFLEET"])
        let connection = FakeMQTTConnection()
        let channel = channel(target, connection)
        let loop = Task { await channel.run() }
        _ = await target.calls.next()  // connecting
        channel.handle(.connected(broker))
        #expect(
            await target.calls.next()
                == .state(.connected(broker: "broker.test:1883", topics: ["FLEET", "FLEET/dev1"])))
        #expect(await target.calls.next() == .request(.pushReconnect))
        #expect(connection.unsubscribed == ["OLD"])
        #expect(await target.notes[.mqttTopics] == "FLEET\nFLEET/dev1")

        // A reconnect: a ping may have been missed, fetched after the jitter (a fleet must not stampede).
        channel.handle(.disconnected(broker))
        #expect(await target.calls.next() == .state(.reconnecting(broker: "broker.test:1883")))
        channel.handle(.connected(broker))
        _ = await target.calls.next()  // connected
        #expect(await target.calls.next() == .requestAfterJitter(.pushReconnect, .seconds(3)))
        loop.cancel()
        await loop.value
    }

    @Test func aConnectDuringAFetchRoundAsksForNoFetchOfItsOwn() async {
        let (target, connection) = (FakePushTarget(fetching: true), FakeMQTTConnection())
        let channel = channel(target, connection)
        let loop = Task { await channel.run() }
        _ = await target.calls.next()  // connecting
        channel.handle(.connected(broker))
        channel.handle(.message(topic: "FLEET", payload: ping("STALE")))
        _ = await target.calls.next()  // connected
        // Next comes the message: no fetch request in between.
        #expect(await target.calls.next() == .handled(data: ["CONFIG_STATE": "STALE"], channel: "mqtt FLEET"))
        loop.cancel()
        await loop.value
    }

    @Test func messagesGoToTheHandlerInOrderAndUnreadableOnesAreOnlyConsumed() async {
        let (target, connection) = (FakePushTarget(), FakeMQTTConnection())
        let channel = channel(target, connection)
        let loop = Task { await channel.run() }
        _ = await target.calls.next()  // connecting
        channel.handle(.message(topic: "FLEET", payload: Array("not json".utf8)))
        channel.handle(.message(topic: "FLEET/dev1", payload: ping("A")))
        channel.handle(.message(topic: "FLEET", payload: ping("B")))
        #expect(await target.calls.next() == .handled(data: ["CONFIG_STATE": "A"], channel: "mqtt FLEET/dev1"))
        #expect(await target.calls.next() == .handled(data: ["CONFIG_STATE": "B"], channel: "mqtt FLEET"))
        loop.cancel()
        await loop.value
        // Every message's room is given back, the unreadable one's too.
        #expect(connection.consumed == ["FLEET", "FLEET/dev1", "FLEET"])
    }

    @Test func aRefusedSubscriptionShowsInStatusUntilTheBrokerTakesIt() async {
        let (target, connection) = (FakePushTarget(), FakeMQTTConnection())
        let channel = channel(target, connection)
        let loop = Task { await channel.run() }
        _ = await target.calls.next()  // connecting
        channel.handle(
            .subscriptionRefused(
                topic: "FLEET/dev1", broker: broker, refusals: 1, retryIn: .seconds(1), worthLogging: true))
        #expect(
            await target.calls.next() == .state(.subscriptionRefused(broker: "broker.test:1883", topic: "FLEET/dev1")))
        channel.handle(.subscriptionGranted(topic: "FLEET/dev1", broker: broker, afterRefusals: 1))
        #expect(
            await target.calls.next()
                == .state(.connected(broker: "broker.test:1883", topics: ["FLEET", "FLEET/dev1"])))
        loop.cancel()
        await loop.value
    }

    @Test func theReplacedChannelUnsubscribesItsTopics() {
        let connection = FakeMQTTConnection()
        channel(FakePushTarget(), connection).unsubscribe()
        #expect(connection.unsubscribed == ["FLEET", "FLEET/dev1"])
    }
}
