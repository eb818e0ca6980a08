import RCCore
import RCMQTT
import RCStore

/// The narrow sides of the agent its channels see: each channel (the device report, the MQTT
/// push channel, the Firebase realtime stream) is given the protocol it needs, never the agent
/// itself, so it can be run against a fake in a unit test. The agent conforms to all of them.
///
/// A note the channel keeps across restarts, named by a ``StateNote`` (never a string of its own).
protocol NoteKeeper: Sendable {
    func note(_ note: StateNote) async -> String?
    func setNote(_ note: StateNote, _ value: String?) async
}

/// The agent's status as its readers (the device report, metrics) get it: pushed, never pulled.
protocol StatusSource: Sendable {
    /// Calls `reader` at once with the status now, then again after every change, with the value
    /// itself (the reader never asks the store), on the agent's executor: it must only hand the
    /// snapshot on (an inbox, a lock). The id ends the subscription.
    func subscribeStatus(_ reader: @escaping @Sendable (StatusSnapshot) -> Void) async -> Int
    func unsubscribeStatus(_ id: Int) async
}

/// What the device report (``Reporter``) needs of the agent: the status pushed to it, its notes,
/// and its own line in `status`.
protocol ReportSubject: StatusSource, NoteKeeper {
    func setReportState(_ state: ReportState?) async
}

/// What the MQTT push channel (``MQTTChannel``) needs of the agent: its line in `status`, fetch
/// requests, and the handler every push message goes through.
protocol PushTarget: NoteKeeper {
    func setPushState(_ state: PushState?) async
    /// Whether a fetch round runs now (a reconnect during one asks for no fetch of its own).
    var isFetching: Bool { get async }
    /// Asks for a fetch; returns at once, from any thread.
    func request(_ trigger: FetchTrigger, reply: (@Sendable (FetchOutcome) -> Void)?)
    /// Asks for a fetch after a random wait of up to `jitter`; returns at once, from any thread.
    func requestAfterJitter(_ trigger: FetchTrigger, jitter: Duration)
    func handle(_ message: PushMessage, from channel: String, wait: Bool, jitter: Duration, strict: Bool)
        async throws -> MessageResponse
}

/// What the Firebase realtime stream (``RealtimeListener``) needs of the agent: the version and
/// ETag it announces itself with, and the fetches its messages start.
protocol RealtimeTarget: NoteKeeper {
    func currentTemplateVersion() async throws -> Int64?
    func status() async throws -> StoreStatus
    func wantsFetchOnStreamOpen() async -> Bool
    func isNewer(_ version: Int64) async -> Bool
    func refetch(toReach target: Int64?) async
}

extension Agent: StatusSource, ReportSubject, PushTarget, RealtimeTarget {}

/// The side of an MQTT connection the device report uses (``MQTTConnection`` is one).
protocol ReportConnection: Sendable {
    var currentBroker: MQTTBroker { get }
    func setWill(_ will: MQTTClient.Will?)
    /// Queues `payload` at QoS 1; its message id comes back as a `published` event.
    func publish(_ payload: [UInt8], topic: String, retain: Bool) throws(MQTTError) -> Int32
}

/// The side of an MQTT connection the push channel uses (``MQTTConnection`` is one).
protocol PushConnection: Sendable {
    var currentBroker: MQTTBroker { get }
    /// The topics the session subscribes on every connect.
    func setSubscriptions(_ topics: [String])
    /// Gives a handled message's room back.
    func consumed(topic: String, payload: [UInt8])
    func unsubscribe(_ topic: String) throws(MQTTError)
}

extension MQTTConnection: ReportConnection, PushConnection {}
