import RCCore
import RCMQTT
import RCService
import Synchronization

/// The device report (`[Report] MQTTStatusTopic=`): publishes the agent's state, retained, QoS 1,
/// on `<topic>/<deviceId>` whenever it changes, paced by ``ReportPacing``, over an
/// ``MQTTConnection`` (the push channel's when both go to the same brokers). Its last will is the
/// report as of the connect, offline; every (re)connect publishes the report again, online (the
/// will, or a broker restarted without persistence, may have replaced or lost it); a clean stop
/// publishes it offline and waits for the broker's acknowledgement before the disconnect.
final class Reporter: Sendable {
    let topic: String
    private let deviceId: String
    private let agent: any ReportSubject
    private let connection: any ReportConnection
    private let log: Logger
    private let inbox = Inbox<Input>()
    /// The broker the connection is on, `nil` while it is not connected (set on its thread).
    private let broker = Mutex<MQTTConnection.Broker?>(nil)
    /// The report of the last status the agent pushed, and the subscription that pushes it.
    private let latest = Mutex<(report: DeviceReport?, subscription: Int?)>((nil, nil))

    /// How long a clean stop waits for the broker to acknowledge the offline report.
    static let goodbyeTimeout = Duration.seconds(2)
    private enum Input: Sendable {
        /// The agent's state may have changed.
        case changed
        case connected
        case disconnected
        case published(messageId: Int32)
    }

    init(prefix: String, deviceId: String, agent: any ReportSubject, connection: any ReportConnection, log: Logger) {
        topic = ReportTopic.topic(prefix, deviceId: deviceId)
        self.deviceId = deviceId
        self.agent = agent
        self.connection = connection
        self.log = log
    }

    /// Sets the connection's last will from the state now: call before the connection starts.
    func prepare() async {
        await subscribe()
        if let report = report(online: false) { connection.setWill(will(report)) }
        await agent.setReportState(.waiting(broker: connection.currentBroker.name))
    }

    /// Subscribes to the agent's status, once: every snapshot's report is kept, and the loop told.
    private func subscribe() async {
        guard latest.withLock({ $0.subscription }) == nil else { return }
        let id = await agent.subscribeStatus { [self] snapshot in
            latest.withLock { $0.report = snapshot.device }
            inbox.send(.changed)
        }
        latest.withLock { $0.subscription = id }
    }

    /// Ends the subscription (the loop stopped, or never ran): the last report stays for the goodbye.
    private func unsubscribe() async {
        let subscription = latest.withLock { latest in
            defer { latest.subscription = nil }
            return latest.subscription
        }
        if let subscription { await agent.unsubscribeStatus(subscription) }
    }

    /// The report of the last status pushed, as this device publishes it now.
    private func report(online: Bool) -> DeviceReport? {
        guard var report = latest.withLock({ $0.report }) else { return nil }
        report.deviceId = deviceId
        report.online = online
        report.at = .now()
        return report
    }

    /// What the connection reports, on its network thread.
    func handle(_ event: MQTTConnection.Event) {
        switch event {
        case let .connected(broker):
            self.broker.withLock { $0 = broker }
            inbox.send(.connected)
        case .disconnected:
            broker.withLock { $0 = nil }
            inbox.send(.disconnected)
        case let .published(messageId): inbox.send(.published(messageId: messageId))
        case .message, .oversized, .subscribed, .subscriptionGranted, .subscriptionRefused, .subscribeFailed, .failed,
            .refused, .fellBack:
            break  // the push channel's, when it shares the connection; what the connection logs
        }
    }

    /// Publishes reports until the calling task is cancelled.
    func run() async {
        await subscribe()
        var pacing = ReportPacing()
        var last: DeviceReport?
        var awaited: (messageId: Int32, at: Timestamp)?
        var clearedEarlierTopic = false
        while !Task.isCancelled {
            let connected = broker.withLock { $0 }
            let input = await inbox.next(until: connected == nil ? nil : pacing.due)
            if Task.isCancelled { break }
            switch input {
            case .changed?:
                pacing.changed(at: .now)
            case .connected?:
                guard let connected = broker.withLock({ $0 }) else { continue }
                if !clearedEarlierTopic { clearedEarlierTopic = await clearEarlierTopic() }
                // Always, unchanged or not: the will or a broker restart may have replaced it.
                guard let report = report(online: true) else { continue }
                awaited = publish(report) ?? awaited
                last = report
                pacing.published(at: .now)
                log.info("Reporting to \(topic) on \(connected.name)")
            case .disconnected?:
                await agent.setReportState(.waiting(broker: connection.currentBroker.name))
            case let .published(messageId)?:
                guard let sent = awaited, sent.messageId == messageId, let on = broker.withLock({ $0 }) else {
                    continue
                }
                awaited = nil
                await agent.setReportState(.published(at: sent.at, topic: topic, broker: on.name))
            case nil:
                // The pacing deadline (or a wake-up with nothing due).
                guard pacing.isDue(at: .now), broker.withLock({ $0 }) != nil, let report = report(online: true) else {
                    continue
                }
                if let last, report.sameState(as: last) {
                    pacing.unchanged()
                    continue
                }
                awaited = publish(report) ?? awaited
                last = report
                pacing.published(at: .now)
            }
        }
        await unsubscribe()
    }

    /// Publishes the report retained and makes it (offline) the will of the next connect; the
    /// message id and time of the publish, `nil` when it could not be queued (the connection is
    /// gone: its reconnect publishes again).
    private func publish(_ report: DeviceReport) -> (messageId: Int32, at: Timestamp)? {
        connection.setWill(will(report))
        do {
            let id = try connection.publish(Array(report.json.compactText.utf8), topic: topic, retain: true)
            return (id, report.at)
        } catch {
            log.warning("Failed to publish the device report to \(topic): \(error.reason)")
            return nil
        }
    }

    private func will(_ report: DeviceReport) -> MQTTClient.Will {
        var offline = report
        offline.online = false
        return MQTTClient.Will(topic: topic, payload: Array(offline.json.compactText.utf8), qos: 1, retain: true)
    }

    /// Clears the retained report an earlier config left on another topic (an empty retained
    /// message deletes it), once per run; `true` once that is done. The full topic of the last
    /// report is kept in the ``StateNote/reportTopic`` note, across reloads and restarts.
    private func clearEarlierTopic() async -> Bool {
        let earlier = await agent.note(.reportTopic)
        if let earlier, earlier != topic {
            do {
                _ = try connection.publish([], topic: earlier, retain: true)
                log.info("Cleared the device report on \(earlier) (the report topic is now \(topic))")
            } catch {
                return false
            }
        }
        if earlier != topic { await agent.setNote(.reportTopic, topic) }
        return true
    }

    /// A clean stop: publishes the report offline and waits (``goodbyeTimeout`` at most) for the
    /// broker's acknowledgement, so the disconnect that follows does not lose it. Runs after the
    /// service's task was cancelled, so the wait runs in a task of its own, which is not.
    func goodbye() async {
        await unsubscribe()
        await sayOffline()
        // Gone from status, whether a reload removed the report or another one replaces it.
        await agent.setReportState(nil)
    }

    private func sayOffline() async {
        guard broker.withLock({ $0 }) != nil, let report = report(online: false) else { return }
        let messageId: Int32
        do {
            messageId = try connection.publish(Array(report.json.compactText.utf8), topic: topic, retain: true)
        } catch {
            log.warning("Failed to publish the offline device report to \(topic): \(error.reason)")
            return
        }
        let deadline = ContinuousClock.now + Self.goodbyeTimeout
        let acknowledged = await Task { [inbox] in
            while let input = await inbox.next(until: deadline) {
                if case .published(messageId) = input { return true }
            }
            return false
        }.value
        if !acknowledged {
            log.warning("The broker did not acknowledge the offline device report within 2 s; stopping anyway")
        }
    }
}
