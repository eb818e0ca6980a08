import Foundation
import Glibc
import TestSupport
import Testing

/// `rcadmin fleet status` reading the reports' `activation` member (safe activation) from a real
/// mosquitto: reports written by hand, as an agent with safe activation publishes them, next to
/// one from an older agent without the member (neither deferred nor rolled back).
@Suite struct FleetActivationTests {
    typealias Fleet = FleetStatusTests.Fleet

    /// A report as an agent writes it; `activation` is the member's JSON text, or none at all.
    static func report(_ id: String, _ version: String, activation: String?) -> String {
        #"{"deviceId":"\#(id)","online":true,"at":"2026-12-01T10:00:00Z","agentVersion":"0.9.0","#
            + #""templateVersion":"\#(version)","stale":{"set":false,"since":null},"#
            + #""lastFetch":{"status":"success","at":"2026-12-01T10:00:00Z","error":null},"#
            + #""app":{"installed":"1.0.0","update":"none"},"activities":0,"signature":null"#
            + (activation.map { #","activation":\#($0)"# } ?? "") + "}"
    }

    static let none = #"{"deferred":null,"trial":null,"lastRollback":null,"rejected":[]}"#

    static func publishFleet(_ fleet: Fleet) throws {
        let rollback = #"{"templateVersion":"44","at":"2026-12-01T09:58:00Z","reason":"health check failed (exit 1)"}"#
        let reports = [
            ("k1", "44", none),
            ("k2", "43", #"{"deferred":"44","trial":null,"lastRollback":null,"rejected":[]}"#),
            ("k3", "43", #"{"deferred":null,"trial":null,"lastRollback":\#(rollback),"rejected":["44"]}"#),
            ("k4", "43", #"{"deferred":null,"trial":null,"lastRollback":\#(rollback),"rejected":["42","44"]}"#),
            ("k5", "44", #"{"deferred":null,"trial":"44","lastRollback":null,"rejected":[]}"#),
        ]
        for (id, version, activation) in reports {
            try fleet.publish(raw: report(id, version, activation: activation), topic: "rcagent/status/\(id)")
        }
        // An agent from before safe activation.
        try fleet.publish(raw: report("old", "43", activation: nil), topic: "rcagent/status/old")
    }

    @Test func showsDeferredDevicesAndRollbacksPerVersion() throws {
        let fleet = try Fleet()
        try Self.publishFleet(fleet)
        let text = try fleet.status([])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.hasPrefix("Devices: 6 (online 6, offline 0)\n"), "\(text.stdout)")
        #expect(text.stdout.contains("\nActivation deferred: 1\nRolled back: 2\n"), "\(text.stdout)")
        #expect(
            text.stdout.contains(
                "Rollbacks per version (devices that rolled it back or reject it):\n  v44  2\n  v42  1\n"),
            "\(text.stdout)")
        #expect(text.stdout.contains("\nActivation deferred (1):\n  k2: v44\n"), "\(text.stdout)")
        #expect(
            text.stdout.contains(
                "\nRolled back (2):\n  k3: v44 at 2026-12-01T09:58:00Z: health check failed (exit 1)\n  k4: v44 at "),
            "\(text.stdout)")

        let json = try fleet.status(["--json"])
        #expect(json.status == 0, "\(json.stderr)")
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json.stdout)")
        let counts = try #require(document["counts"] as? [String: Int])
        #expect(counts["deferred"] == 1 && counts["rolledBack"] == 2, "\(counts)")
        let rollbacks = try #require(document["rollbacks"] as? [[String: Any]])
        #expect(rollbacks.map { $0["version"] as? String } == ["44", "42"])
        #expect(rollbacks.map { $0["devices"] as? Int } == [2, 1])
        let lists = try #require(document["lists"] as? [String: [String]])
        #expect(lists["deferred"] == ["k2"] && lists["rolledBack"] == ["k3", "k4"])
        let devices = try #require(document["devices"] as? [[String: Any]])
        let k3 = try #require(devices.first { $0["deviceId"] as? String == "k3" })
        #expect((k3["activation"] as? [String: Any])?["rejected"] as? [String] == ["44"])
        #expect(devices.first { $0["deviceId"] as? String == "old" }?["activation"] == nil)
    }

    @Test func theWatchLineShowsThemAsTheyChange() throws {
        let fleet = try Fleet()
        try fleet.publish(raw: Self.report("k1", "43", activation: Self.none), topic: "rcagent/status/k1")
        let watch = try fleet.watch([])
        #expect(
            eventually(60) {
                watch.lines.contains {
                    $0.hasSuffix(" devices 1 online 1 · v43 1 (100%) · stale 0 · failing 0 · offline 0")
                }
            },
            "\(watch.lines)\n\(watch.stderr)")
        try Self.publishFleet(fleet)
        #expect(
            eventually(60) {
                watch.lines.last?.hasSuffix(" · offline 0 · deferred 1 · rolled back v44 2, v42 1") == true
            },
            "\(watch.lines)\n\(watch.stderr)")
        #expect(watch.stop(SIGINT).status == 0, "\(watch.stderr)")
    }

    @Test func aBadActivationMemberIsAnUnreadableReportNamingIt() throws {
        let fleet = try Fleet()
        try fleet.publish(raw: Self.report("k1", "43", activation: Self.none), topic: "rcagent/status/k1")
        try fleet.publish(
            raw: Self.report("bad", "43", activation: #"{"rejected":"44\u001b[31m"}"#), topic: "rcagent/status/bad")
        let result = try fleet.status([])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("Unreadable reports: 1\n"), "\(result.stdout)")
        #expect(
            result.stdout.contains("rcagent/status/bad: invalid device report: activation.rejected is string"),
            "\(result.stdout)")
    }
}
