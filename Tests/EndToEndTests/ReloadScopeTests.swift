import Foundation
import Glibc
import TestSupport
import Testing

/// A reload touches only what changed, end to end with the real daemon and a real mosquitto: a new
/// source keeps the MQTT connection (and the report online), and a setting written another way
/// with the same value is no change.
@Suite struct ReloadScopeTests {
    /// Regression (failed before: a source change rebuilt every service of the config, so the MQTT
    /// connection went down and up, the report said offline then online, and the reconnect asked
    /// for a fetch of its own): the agent takes the new source and fetches from it; the push and
    /// report connection stays as it is.
    @Test func aSourceChangeKeepsTheMQTTConnectionAndTheReportOnline() throws {
        let (sandbox, server, broker) = try ReportTests().setUp()
        let subscriber = try ReportSubscriber(sandbox, port: broker.port)
        #expect(try subscriber.waitUntilLive())
        let (daemon, topic) = try ReportTests().start(sandbox, server, subscriber)
        #expect(eventually { daemon.log.contains("MQTT connected") }, "\(daemon.log)")

        let other = try ConfigServer(in: sandbox)
        try other.serve(Sandbox.document(version: 2), etag: "\"v2\"")
        try ReloadTests().dropIn(sandbox, "10-source.conf", "[Source]\nURL=\(other.url)\n")
        let reload = try sandbox.cli("reload")
        #expect(reload.stdout == "reloaded: Source.URL changed\n", "\(reload.stdout)\(reload.stderr)")
        // The new source is fetched from at once, and the report follows on the same connection.
        #expect(
            eventually { subscriber.reports(on: topic).last?["templateVersion"] as? String == "2" },
            "\(subscriber.messages.map(\.payload))\n\(daemon.log)")

        let reports = subscriber.reports(on: topic)
        #expect(!reports.contains { $0["online"] as? Bool == false }, "\(reports)")
        #expect(daemon.log.components(separatedBy: "MQTT connected").count == 2, "\(daemon.log)")
        // One fetch from the new source: the reload's (no reconnect asked for another).
        #expect(other.requests.count == 1, "\(other.requests)")
        #expect(try sandbox.cli("status").stdout.contains(" connected, topics "))
        #expect(daemon.stop() == 0)
    }

    /// Regression (failed before: settings were compared as text): `60s` and `1min` are one
    /// interval, so a reload that only rewrites it reports nothing changed.
    @Test func aDurationWrittenAnotherWayIsNoChange() throws {
        let sandbox = try Sandbox()
        let daemon = try sandbox.startServing(version: 1)
        try ReloadTests().dropIn(sandbox, "10-interval.conf", "[Agent]\nMinimumFetchInterval=60s\n")
        #expect(try sandbox.cli("reload").stdout == "reloaded: Agent.MinimumFetchInterval changed\n")

        try ReloadTests().dropIn(sandbox, "10-interval.conf", "[Agent]\nMinimumFetchInterval=1min\n")
        let reload = try sandbox.cli("reload")
        #expect(reload.stdout == "reloaded: nothing changed\n", "\(reload.stdout)\(reload.stderr)")
        #expect(daemon.log.contains("Reloaded the config: nothing changed"), "\(daemon.log)")

        try ReloadTests().dropIn(sandbox, "10-interval.conf", "[Agent]\nMinimumFetchInterval=2min\n")
        #expect(try sandbox.cli("reload").stdout == "reloaded: Agent.MinimumFetchInterval changed\n")
        #expect(daemon.stop() == 0)
    }
}
