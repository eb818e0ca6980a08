import Dispatch
import RCCore
import RCMQTT
import RCSystem
import Synchronization

/// Reads the fleet's retained reports from the broker with RCMQTT's client: subscribes to
/// `<topic>/+` (the reports) and `<topic>/+/+/#` (topics with extra levels, which are no device's
/// report and are listed as unreadable), clean session, a random client id, and feeds every
/// message to a ``FleetInbox``. ``RetainedSetProgress`` decides when the retained set is in.
///
/// The subscriptions are QoS 0, on purpose. A broker sends the retained messages of a QoS 1
/// subscription through the client's queue of unacknowledged messages, and mosquitto drops what
/// does not fit (`max_inflight_messages` 20 plus `max_queued_messages` 1000 by default), silently:
/// measured on mosquitto 2.0.11 with 5,000 retained reports, a QoS 1 subscriber got 1,021 and a
/// QoS 0 one all 5,000. Over one TCP connection QoS 0 loses nothing while the connection lasts,
/// and a lost connection rebuilds the picture from the retained set anyway.
///
/// Every call blocks (connect, the network loop): run it on a thread of its own, never on the
/// cooperative pool. The connection is an ``MQTTSession`` whose thread runs the network loop
/// (``CollectorLoop``), so reading reports, however many and however costly, never holds up the
/// keepalive; its events are queued and handled on the caller's thread, so the inbox has one owner
/// and needs no lock. A message over ``DeviceReport/maximumSize`` is dropped before any copy of it
/// and listed as unreadable. The session speaks MQTT 5 first, telling the broker that limit (which
/// then does not send larger messages at all), and MQTT 3.1.1 to a broker that refuses the version
/// (NATS); in a watch it reconnects after a lost connection, once a second.
final class ReportCollector: Sendable {
    /// Where the broker is and how to log in, from the command line.
    struct Settings: Sendable {
        var url: String
        var topic: String
        var login: MQTTLogin
        /// The bound on connecting and on the retained set; in a watch, also how long a lost
        /// connection may take to come back.
        var timeout: Duration
        var capacity: Int
    }

    /// What a one-shot collection got.
    struct Collection: Sendable {
        let inbox: FleetInbox
        /// Whether the retained set was delivered (marker or quiet) before the timeout.
        let complete: Bool
    }

    private let settings: Settings
    private let host: String
    private let port: Int32
    private let session: MQTTSession
    private let loop: CollectorLoop
    /// This run's marker topic: unique, so another operator's run does not end ours.
    private let markerTopic: String
    private let subscriptions: [String]
    private let received = Atomic<Int>(0)

    /// Messages on the report topic since the collector was made, across reconnects (the
    /// exporter's `rcagent_fleet_reports_received_total`): reports, cleared ones, unreadable ones.
    var reportsReceived: Int { received.load(ordering: .relaxed) }

    init(_ settings: Settings) throws(AdminFailure) {
        guard let (tls, host, port) = MQTTAddress.parse(settings.url) else {
            throw .usage("--mqtt must be an mqtt:// or mqtts:// URL, got '\(TextEscaping.terminal(settings.url))'")
        }
        var options: MQTTClient.Options
        do { options = try settings.login.clientOptions(tls: tls) } catch { throw .failure(error.description) }
        options.threaded = true  // the loop runs on its own thread; this one subscribes and publishes
        options.maximumPayload = DeviceReport.maximumSize
        let client: MQTTClient
        do { client = try MQTTClient(options) } catch { throw .failure(TextEscaping.terminal(error.description)) }
        var configuration = MQTTSession.Configuration(brokers: [MQTTBroker(host: host, port: port)])
        configuration.keepAlive = 15
        configuration.maximumBacklog = CollectorLoop.maximumBacklog
        // One broker: every failure is a full round; a lost watch comes back once a second.
        configuration.reconnectBase = .seconds(1)
        configuration.reconnectCap = .seconds(1)
        configuration.loopTimeout = .milliseconds(100)
        session = MQTTSession(client: client, configuration)
        loop = CollectorLoop(session: session)
        self.settings = settings
        self.host = host
        self.port = port
        let random = UInt64.random(in: 0...UInt64.max)
        markerTopic = settings.topic + "/" + FleetInbox.markerPrefix + String(random, radix: 16)
        // The reports last: a broker sends a subscription's retained messages right after its
        // SUBACK, and mosquitto, its queue for this client overrun by a large retained set, never
        // sent the SUBACK of a subscription made after that (measured with 20,000 reports).
        subscriptions = [settings.topic + "/+/+/#", settings.topic + "/+"]
    }

    private var broker: String { "\(TextEscaping.terminal(host)):\(port)" }

    /// One connection's progress: the SUBACKs still awaited and the retained set's.
    private struct Session {
        var connected = false
        var pending: Set<Int32> = []
        var subscribed = false
        var progress = RetainedSetProgress()
        var inbox: FleetInbox
        /// The retained set is in: changes from now on are shown as they come.
        var live = false
        /// The inbox changed since the loop last looked.
        var changed = false
        /// Why the connection ended, when it did.
        var lost: String?
        /// Why the connection could not be made, when it could not.
        var unreachable: String?
    }

    /// Connects, collects the retained reports and disconnects. Throws when the broker cannot be
    /// reached, refuses the client or drops the connection; an incomplete set (still arriving at
    /// the timeout) is returned as such.
    func collect() throws(AdminFailure) -> Collection {
        let deadline = ContinuousClock.now + settings.timeout
        try connect()
        defer { disconnect() }
        var session = Session(inbox: FleetInbox(base: settings.topic, capacity: settings.capacity))
        while ContinuousClock.now < deadline {
            if let reason = try round(&session) {
                throw .failure("lost the connection to the MQTT broker at \(broker): \(reason)")
            }
            if session.progress.isComplete(at: .now) {
                return Collection(inbox: session.inbox, complete: true)
            }
        }
        guard session.subscribed else {
            throw .failure(
                "the MQTT broker at \(broker) did not "
                    + (session.connected ? "confirm the subscription" : "accept the connection")
                    + " within \(DurationText.format(settings.timeout))")
        }
        return Collection(inbox: session.inbox, complete: false)
    }

    /// Follows the reports until `stop` is set (then returns normally) or the connection is lost
    /// for longer than the timeout (then throws). `changed` gets the inbox once the retained set is
    /// in (or the timeout passed), then whenever it changed, at most once per `interval`; after a
    /// reconnect the inbox is rebuilt from the retained set again before it replaces the old one,
    /// so a report cleared meanwhile disappears. `connected` is told `true` when a retained set is in
    /// (the picture is live), `false` when the connection is lost (the picture is the last one).
    func watch(
        stop: StopSignal, interval: Duration = .seconds(1), connected: (Bool) -> Void = { _ in },
        changed: (FleetInbox) -> Void
    ) throws(AdminFailure) {
        try connect()
        defer { disconnect() }
        var session = Session(inbox: FleetInbox(base: settings.topic, capacity: settings.capacity))
        var sessionStart = ContinuousClock.now
        // Whether a picture was ever shown: before that, a lost connection is a plain failure.
        var shownOnce = false
        var dirty = false
        var lastShown = ContinuousClock.now
        var lostSince: ContinuousClock.Instant?
        var lastError = ""
        while !stop.isSet {
            if let since = lostSince {
                // The session reconnects (once a second) until the connection is back or the time is up.
                if ContinuousClock.now - since >= settings.timeout {
                    throw .failure(
                        "lost the connection to the MQTT broker at \(broker) (\(lastError)) and it did not "
                            + "come back within \(DurationText.format(settings.timeout))")
                }
                var reconnected = false
                for item in loop.take(waiting: .milliseconds(100)) {
                    switch item {
                    case .connected: reconnected = true
                    case let .failed(_, reason, _, _, _, _): lastError = TextEscaping.terminal(reason)
                    case let .refused(_, reason):
                        throw .failure(
                            "the MQTT broker at \(broker) refused the connection: \(TextEscaping.terminal(reason))")
                    case let .message(topic, payload):
                        loop.consumed(topic: topic, payload: payload)  // of the connection that was lost
                    default: break
                    }
                }
                guard reconnected else { continue }
                lostSince = nil
                // The old picture stays on screen until the new retained set is in.
                session = Session(inbox: FleetInbox(base: settings.topic, capacity: settings.capacity))
                sessionStart = .now
                Output.note("Reconnected to the MQTT broker at \(broker)")
                subscribe(&session)
                continue
            }
            if let reason = try round(&session) {
                guard shownOnce else {
                    throw .failure("lost the connection to the MQTT broker at \(broker): \(reason)")
                }
                lastError = reason
                lostSince = .now
                connected(false)
                Output.note("Lost the connection to the MQTT broker at \(broker) (\(reason)); reconnecting")
                continue
            }
            let now = ContinuousClock.now
            if !session.live {
                // Collecting a retained set: shown once it is in, or as it is at the timeout.
                let timedOut = now - sessionStart >= settings.timeout
                if session.progress.isComplete(at: now) || (timedOut && session.subscribed) {
                    session.live = true
                    shownOnce = true
                    dirty = true
                    lastShown = now - interval
                    connected(true)
                } else if timedOut {
                    throw .failure(
                        "the MQTT broker at \(broker) did not "
                            + (session.connected ? "confirm the subscription" : "accept the connection")
                            + " within \(DurationText.format(settings.timeout))")
                }
            } else if session.changed {
                dirty = true
            }
            session.changed = false
            if dirty, session.live, now - lastShown >= interval {
                changed(session.inbox)
                dirty = false
                lastShown = now
            }
        }
    }

    /// Starts the session's thread, which connects (the CONNACK comes in the loop).
    private func connect() throws(AdminFailure) {
        guard loop.start() else { throw .failure("cannot start a thread for the MQTT connection") }
    }

    private func disconnect() {
        loop.stop()
    }

    /// Asks for the reports (QoS 0, see above); the SUBACKs come as events.
    private func subscribe(_ session: inout Session) {
        session.connected = true
        for topic in subscriptions {
            do { session.pending.insert(try self.session.subscribe(topic, qos: 0)) } catch {
                session.lost = session.lost ?? TextEscaping.terminal(error.reason)
            }
        }
    }

    /// One round: waits at most 100 ms for what the network thread got, then handles all of it.
    /// Returns why the connection ended if it did (escaped); throws what no reconnect can mend,
    /// and a broker that could not be reached at all.
    private func round(_ session: inout Session) throws(AdminFailure) -> String? {
        for item in loop.take(waiting: .milliseconds(100)) { try handle(item, &session) }
        if let reason = session.unreachable, !session.connected {
            throw .failure("cannot reach the MQTT broker at \(broker): \(reason)")
        }
        return session.lost
    }

    private func handle(_ event: MQTTSession.Event, _ session: inout Session) throws(AdminFailure) {
        switch event {
        case .connected:
            subscribe(&session)
        case let .refused(_, reason):
            throw .failure("the MQTT broker at \(broker) refused the connection: \(TextEscaping.terminal(reason))")
        case let .failed(_, reason, lost, _, _, _):
            if lost || session.connected {
                session.lost = session.lost ?? TextEscaping.terminal(reason)
            } else {
                session.unreachable = session.unreachable ?? TextEscaping.terminal(reason)
            }
        case let .subscribed(messageId, refused):
            if refused {
                throw .failure(
                    "the MQTT broker at \(broker) refused the subscription to \(TextEscaping.terminal(settings.topic))/+ "
                        + "(does this user have read access to it?)")
            }
            session.pending.remove(messageId)
            guard session.pending.isEmpty, !session.subscribed else { return }
            session.subscribed = true
            session.progress.subscribed(at: .now)
            // Non-retained: it reaches only current subscribers, after what the broker queued for
            // this client so far. QoS 1 so that it is not dropped on the way in; it comes back at
            // the subscription's QoS 0. A refused publish is not an error: the quiet period ends
            // the collection instead.
            _ = try? self.session.publish(
                Array("end of retained reports".utf8), topic: markerTopic, qos: 1, retain: false)
        case let .message(topic, payload):
            defer { loop.consumed(topic: topic, payload: payload) }
            if topic.sameBytes(as: markerTopic) {
                session.progress.marker(at: .now)
            } else {
                session.progress.message(at: .now)
                received.add(1, ordering: .relaxed)
                if session.inbox.receive(topic: topic, payload: payload) { session.changed = true }
            }
        case let .oversized(topic, size):
            // Part of the retained set all the same (the quiet period waits for it), and listed.
            session.progress.message(at: .now)
            received.add(1, ordering: .relaxed)
            if session.inbox.receive(topic: topic, payload: [], oversized: size) { session.changed = true }
        case .published, .disconnected, .fellBack, .subscriptionGranted, .subscriptionRefused, .subscribeFailed:
            break  // the loss comes with its reason as .failed; the session subscribes nothing of its own
        }
    }
}

/// Set by SIGINT or SIGTERM, read by the watch loop on its thread; ``wait(_:)`` sleeps until it is
/// set or the time passes, so a stop during a reconnect wait is not delayed.
final class StopSignal: Sendable {
    private let flag = Mutex(false)
    private let wakeUp = DispatchSemaphore(value: 0)

    var isSet: Bool { flag.withLock { $0 } }

    func set() {
        flag.withLock { $0 = true }
        wakeUp.signal()
    }

    func wait(_ duration: Duration) {
        guard !isSet else { return }
        _ = wakeUp.wait(timeout: .now() + .milliseconds(Int(duration.milliseconds)))
        if isSet { wakeUp.signal() }  // for the next wait
    }
}
