import RCCore
import RCMQTT
import RCStore
import Synchronization

@testable import RCAgent

/// An MQTT connection that records what the report and the push channel ask of it; events are
/// handed to them by the test (``Reporter/handle(_:)``, ``MQTTChannel/handle(_:)``) as the
/// network thread would.
final class FakeMQTTConnection: ReportConnection, PushConnection {
    struct Publish: Sendable, Equatable {
        let payload: [UInt8]
        let topic: String
        let retain: Bool
        let messageId: Int32

        /// The report it carries (`nil` for an empty payload, which deletes a retained message).
        var report: DeviceReport? { payload.isEmpty ? nil : try? DeviceReport(parsing: payload) }
    }

    private struct State {
        var will: MQTTClient.Will?
        var subscriptions: [String] = []
        var unsubscribed: [String] = []
        var consumed: [String] = []
        var nextId: Int32 = 1
    }

    let currentBroker = MQTTBroker(host: "broker.test", port: 1883)
    private let state = Mutex(State())
    /// Every publish, in order, for the test to wait on.
    let publishes = Inbox<Publish>()

    var will: MQTTClient.Will? { state.withLock { $0.will } }
    var subscriptions: [String] { state.withLock { $0.subscriptions } }
    var unsubscribed: [String] { state.withLock { $0.unsubscribed } }
    var consumed: [String] { state.withLock { $0.consumed } }

    func setWill(_ will: MQTTClient.Will?) { state.withLock { $0.will = will } }

    func publish(_ payload: [UInt8], topic: String, retain: Bool) throws(MQTTError) -> Int32 {
        let id = state.withLock { state in
            defer { state.nextId += 1 }
            return state.nextId
        }
        publishes.send(Publish(payload: payload, topic: topic, retain: retain, messageId: id))
        return id
    }

    func setSubscriptions(_ topics: [String]) { state.withLock { $0.subscriptions = topics } }

    func consumed(topic: String, payload: [UInt8]) { state.withLock { $0.consumed.append(topic) } }

    func unsubscribe(_ topic: String) throws(MQTTError) { state.withLock { $0.unsubscribed.append(topic) } }
}

/// The agent as the device report sees it: a status whose template the test changes, pushed to
/// the subscribers, the report's status lines (for the test to wait on) and the notes.
actor FakeReportSubject: ReportSubject {
    private var templateVersion: String?
    private var readers: [Int: @Sendable (StatusSnapshot) -> Void] = [:]
    private var lastReader = 0
    private(set) var notes: [StateNote: String] = [:]
    /// Every state the reporter set, in order.
    nonisolated let states = Inbox<ReportState?>()
    /// Every subscription, so a test knows the reporter listens before it changes anything.
    nonisolated let observing = Inbox<Int>()

    init(notes: [StateNote: String] = [:]) {
        self.notes = notes
    }

    private func snapshot() -> StatusSnapshot {
        StatusSnapshot(
            store: nil, fetching: false, push: nil, report: nil,
            device: DeviceReport(
                deviceId: "from the store", online: true, at: .now(), agentVersion: "test",
                templateVersion: templateVersion, stale: .init(set: false, since: nil),
                lastFetch: .init(status: nil, at: nil, error: nil), appInstalled: nil, update: .unknown, activities: 0))
    }

    func subscribeStatus(_ reader: @escaping @Sendable (StatusSnapshot) -> Void) -> Int {
        lastReader += 1
        readers[lastReader] = reader
        reader(snapshot())
        observing.send(lastReader)
        return lastReader
    }

    func unsubscribeStatus(_ id: Int) { readers[id] = nil }

    func setReportState(_ state: ReportState?) { states.send(state) }

    func note(_ note: StateNote) -> String? { notes[note] }

    func setNote(_ note: StateNote, _ value: String?) { notes[note] = value }

    /// Moves the state to `version` (`nil`: leaves it) and pushes it to the subscribers.
    func change(templateVersion version: String?) {
        if let version { templateVersion = version }
        let snapshot = snapshot()
        for reader in readers.values { reader(snapshot) }
    }
}

/// The agent as the push channel sees it: every call recorded, in order, for the test to wait on.
actor FakePushTarget: PushTarget {
    enum Call: Sendable, Equatable {
        case state(PushState?)
        case request(FetchTrigger)
        case requestAfterJitter(FetchTrigger, Duration)
        case handled(data: [String: String], channel: String)
    }

    nonisolated let calls = Inbox<Call>()
    private(set) var notes: [StateNote: String]
    private let fetching: Bool

    init(notes: [StateNote: String] = [:], fetching: Bool = false) {
        self.notes = notes
        self.fetching = fetching
    }

    func setPushState(_ state: PushState?) { calls.send(.state(state)) }

    var isFetching: Bool { fetching }

    nonisolated func request(_ trigger: FetchTrigger, reply: (@Sendable (FetchOutcome) -> Void)?) {
        calls.send(.request(trigger))
    }

    nonisolated func requestAfterJitter(_ trigger: FetchTrigger, jitter: Duration) {
        calls.send(.requestAfterJitter(trigger, jitter))
    }

    func handle(_ message: PushMessage, from channel: String, wait: Bool, jitter: Duration, strict: Bool)
        -> MessageResponse
    {
        calls.send(.handled(data: message.data, channel: channel))
        return .ignored("recorded")
    }

    func note(_ note: StateNote) -> String? { notes[note] }

    func setNote(_ note: StateNote, _ value: String?) { notes[note] = value }
}
