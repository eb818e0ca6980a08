import Foundation
import Glibc
import TestSupport
import Testing

/// A reload that changes or removes the MQTT push channel, end to end: what `status` says about
/// the channel and which topics the broker still delivers.
@Suite struct MQTTReloadTests {
    /// The `push:` line of `rcagent status`, or nil when there is none.
    func pushLine(_ sandbox: Sandbox) throws -> String? {
        try sandbox.cli("status").stdout.split(separator: "\n").first { $0.hasPrefix("push:") }.map(String.init)
    }

    /// Regression (failed until the fix): a reload that removes `[Push] MQTT=` stops the
    /// channel, but `status` (and `doctor`) went on reporting the channel that no longer exists,
    /// as "connected" or "disconnected, reconnecting", until the daemon was restarted.
    @Test func aReloadThatRemovesMQTTTakesItsStateOutOfStatus() throws {
        let (sandbox, server, broker) = try MQTTTests().setUp()
        let daemon = try MQTTTests().startConnected(sandbox, server)
        #expect(try eventually { try pushLine(sandbox)?.contains(" connected, topics ") == true })

        try ReloadTests().dropIn(sandbox, "10-no-mqtt.conf", "[Push]\nMQTT=\n")
        let reload = try sandbox.cli("reload")
        #expect(reload.stdout == "reloaded: Push.MQTT changed\n", "\(reload.stdout)\(reload.stderr)")
        // The channel is gone: nothing may claim a push connection any more.
        #expect(try eventually(5) { try pushLine(sandbox) == nil }, "\((try? pushLine(sandbox)) ?? nil ?? "")")
        #expect(daemon.stop() == 0)
        withExtendedLifetime(broker) {}
    }
}

extension MQTTReloadTests {
    /// Regression (failed until the fix: the channel remembers its topics in the state
    /// database and unsubscribes earlier ones at its first connect): rcagentd(8) says a channel a reload
    /// replaces unsubscribes its old topics, so pings on them stop. When the reload comes while
    /// the channel is disconnected (the broker restarting, the network down), the unsubscribe is
    /// dropped (MQTTChannel.unsubscribe without a connection), the new channel resumes the same
    /// persistent session (same client id, clean session off), and the old topic still marks the
    /// device stale.
    @Test func aChannelReplacedWhileDisconnectedStopsHearingItsOldTopic() throws {
        let (sandbox, server, broker) = try MQTTTests().setUp(persistent: true)
        let daemon = try MQTTTests().startConnected(sandbox, server)
        let subscribed = Date()
        #expect(eventually { broker.saved(after: subscribed.addingTimeInterval(0.1)) })

        broker.stop()
        #expect(eventually { daemon.log.contains("MQTT connection to 127.0.0.1:\(broker.port) lost") }, "\(daemon.log)")
        try ReloadTests().dropIn(sandbox, "10-topic.conf", "[Push]\nMQTTTopic=FLEET_B\n")
        #expect(try sandbox.cli("reload").stdout == "reloaded: Push.MQTTTopic changed\n")
        try broker.start()
        #expect(eventually(30) { daemon.log.contains("subscribed to FLEET_B, FLEET_B/") }, "\(daemon.log)")

        try ReloadTests().expectOnlyTheNewTopicHeard(sandbox, server, broker, daemon)
        #expect(daemon.stop() == 0)
    }
}
