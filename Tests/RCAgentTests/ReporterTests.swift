import RCCore
import RCMQTT
import RCService
import RCStore
import Testing

@testable import RCAgent

/// The device report against a fake agent and a fake connection (no broker, no daemon): what it
/// publishes, when, and what it says in `status`.
@Suite(.timeLimit(.minutes(10))) struct ReporterTests {
    let broker = MQTTBroker(host: "broker.test", port: 1883)

    private func reporter(_ subject: FakeReportSubject, _ connection: FakeMQTTConnection) -> Reporter {
        Reporter(prefix: "rc/status", deviceId: "dev1", agent: subject, connection: connection, log: Logger { _ in })
    }

    /// Starts the reporter's loop and waits until it listens for changes.
    private func running(_ reporter: Reporter, _ subject: FakeReportSubject) async -> Task<Void, Never> {
        let task = Task { await reporter.run() }
        _ = await subject.observing.next()
        return task
    }

    @Test func beforeTheConnectTheWillIsTheReportOfflineAndStatusSaysItWaits() async throws {
        let (subject, connection) = (FakeReportSubject(), FakeMQTTConnection())
        await reporter(subject, connection).prepare()
        let will = try #require(connection.will)
        #expect(will.topic == "rc/status/dev1" && will.retain && will.qos == 1)
        #expect(try DeviceReport(parsing: will.payload).online == false)
        #expect(await subject.states.next() == .waiting(broker: "broker.test:1883"))
    }

    @Test func aConnectPublishesTheReportOnlineRetainedAfterClearingTheEarlierTopic() async throws {
        let subject = FakeReportSubject(notes: [.reportTopic: "old/dev1"])
        let connection = FakeMQTTConnection()
        let reporter = reporter(subject, connection)
        let loop = await running(reporter, subject)
        reporter.handle(.connected(broker))

        let cleared = try #require(await connection.publishes.next())
        #expect(cleared == .init(payload: [], topic: "old/dev1", retain: true, messageId: 1))
        let online = try #require(await connection.publishes.next())
        #expect(online.topic == "rc/status/dev1" && online.retain && online.report?.online == true)
        #expect(online.report?.deviceId == "dev1", "the reporter's device id, whatever the pushed status says")
        #expect(await subject.notes[.reportTopic] == "rc/status/dev1")
        // The will follows the report: the broker says offline with the same state.
        #expect(try DeviceReport(parsing: #require(connection.will).payload).online == false)

        // Only the broker's acknowledgement of that publish makes it "published".
        reporter.handle(.published(messageId: 1))  // the clearing's, not the report's
        reporter.handle(.published(messageId: online.messageId))
        let state = try #require(await subject.states.next())
        guard case let .published(_, topic, on)? = state else {
            Issue.record("expected a published state, got \(String(describing: state))")
            return
        }
        #expect(topic == "rc/status/dev1" && on == "broker.test:1883")
        loop.cancel()
        await loop.value
    }

    @Test func aChangedStateIsPublishedAndANotificationWithoutAChangeIsNot() async throws {
        let (subject, connection) = (FakeReportSubject(), FakeMQTTConnection())
        let reporter = reporter(subject, connection)
        let loop = await running(reporter, subject)
        reporter.handle(.connected(broker))
        #expect(await connection.publishes.next()?.report?.templateVersion == nil)

        await subject.change(templateVersion: "7")
        #expect(await connection.publishes.next()?.report?.templateVersion == "7")
        // Told of a change that changed nothing, then of a real one: only the real one goes out.
        await subject.change(templateVersion: nil)
        let paced = ContinuousClock.now + .seconds(3)
        #expect(await connection.publishes.next(until: paced) == nil)
        await subject.change(templateVersion: "8")
        #expect(await connection.publishes.next()?.report?.templateVersion == "8")
        loop.cancel()
        await loop.value
    }

    @Test func aDisconnectSaysItWaitsForTheBroker() async throws {
        let (subject, connection) = (FakeReportSubject(), FakeMQTTConnection())
        let reporter = reporter(subject, connection)
        let loop = await running(reporter, subject)
        reporter.handle(.connected(broker))
        _ = await connection.publishes.next()
        reporter.handle(.disconnected(broker))
        #expect(await subject.states.next() == .waiting(broker: "broker.test:1883"))
        loop.cancel()
        await loop.value
    }

    @Test func aCleanStopPublishesTheReportOfflineAndWaitsForItsAcknowledgement() async throws {
        let (subject, connection) = (FakeReportSubject(), FakeMQTTConnection())
        let reporter = reporter(subject, connection)
        let loop = await running(reporter, subject)
        reporter.handle(.connected(broker))
        _ = await connection.publishes.next()
        loop.cancel()
        await loop.value

        let stop = Task { await reporter.goodbye() }
        let offline = try #require(await connection.publishes.next())
        #expect(offline.topic == "rc/status/dev1" && offline.retain && offline.report?.online == false)
        reporter.handle(.published(messageId: offline.messageId))
        await stop.value
        // Gone from status once stopped; and the acknowledgement came well within the 2 s timeout.
        #expect(await subject.states.next() == .some(nil))
    }
}
