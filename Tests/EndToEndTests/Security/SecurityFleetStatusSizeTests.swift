import Foundation
import RCCore
import TestSupport
import Testing

/// `rcadmin fleet status` against retained messages far over the report limit: on MQTT 5
/// (mosquitto) the broker is told the limit and never sends them; on MQTT 3.1.1 (NATS) each is
/// dropped before any copy and listed as unreadable. The real reports are counted either way.
@Suite struct SecurityFleetStatusSizeTests {
    static func padded(_ size: Int, in sandbox: Sandbox) throws -> String {
        let path = sandbox.root.appendingPathComponent("report-\(size).json").path
        let head = #"{"deviceId":"huge","online":true,"pad":""#
        var bytes = [UInt8](head.utf8)
        bytes += [UInt8](repeating: UInt8(ascii: "x"), count: size - head.utf8.count - 2)
        bytes += [UInt8](#""}"#.utf8)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func aHugeRetainedReportIsNeverSentOnMQTT5() throws {
        let fleet = try FleetStatusTests.Fleet()
        try fleet.publish(FleetStatusTests.report("good", "43"))
        try fleet.broker.publish(
            file: try Self.padded(50 << 20, in: fleet.sandbox), topic: "rcagent/status/huge", retain: true)
        let result = try fleet.status(["--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout)")
        #expect((document["devices"] as? [Any])?.count == 1, "\(result.stdout)")
    }

    @Test func aBigRetainedReportIsListedUnreadOnMQTT311() throws {
        let sandbox = try Sandbox()
        let cluster = try NATSCluster(
            in: sandbox.root.appendingPathComponent("nats"), settings: "max_payload: 8388608")
        let port = cluster.nodes[0].mqttPort
        let good = sandbox.root.appendingPathComponent("good.json").path
        try sandbox.write(FleetStatusTests.report("good", "43").json.compactText, to: good)
        try Mosquitto.publish(file: good, topic: "rcagent/status/good", retain: true, port: port)
        try Mosquitto.publish(
            file: try Self.padded(6 << 20, in: sandbox), topic: "rcagent/status/huge", retain: true, port: port)
        let result = try sandbox.run("rcadmin", ["fleet", "status", "--mqtt", cluster.nodes[0].mqttURL, "--all"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasPrefix("Devices: 1 (online 1, offline 0)\n"), "\(result.stdout)")
        #expect(
            result.stdout.contains(
                "rcagent/status/huge: invalid device report: is \(6 << 20) bytes, over the 16384-byte limit (not read)"),
            "\(result.stdout)")
    }
}
