import RCCore
import Testing

@testable import RCAdmin

/// The `activation` member of device reports in the fleet view: deferred devices, rollbacks per
/// template version, and reports of older agents (no member) counted as neither.
@Suite struct FleetActivationSummaryTests {
    static let t0 = Timestamp(iso8601: "2026-11-30T12:00:00Z")!

    static func activation(
        deferred: String? = nil, trial: String? = nil, rolledBack: String? = nil, rejected: [String] = []
    ) -> DeviceReport.Activation {
        DeviceReport.Activation(
            deferred: deferred, trial: trial,
            lastRollback: rolledBack.map { .init(templateVersion: $0, at: t0, reason: "health check failed (exit 1)") },
            rejected: rejected)
    }

    static let fleet: [DeviceReport] = [
        .sample("a1", "43", at: t0) { $0.activation = activation() },
        .sample("a2", "42", at: t0) { $0.activation = activation(deferred: "43") },
        .sample("a3", "42", at: t0) { $0.activation = activation(rolledBack: "43", rejected: ["43"]) },
        // An earlier rollback of 41 is still rejected; the last one was 43.
        .sample("a4", "42", at: t0) { $0.activation = activation(rolledBack: "43", rejected: ["41", "43"]) },
        .sample("a5", "43", at: t0) { $0.activation = activation(trial: "43") },
        // An agent from before safe activation: no member, neither deferred nor rolled back.
        .sample("old", "42", at: t0),
    ]

    @Test func countsDeferredDevicesAndRollbacksPerVersion() throws {
        let summary = FleetSummary(reports: Self.fleet)
        #expect(summary.deferred == ["a2"])
        #expect(summary.rolledBack == ["a3", "a4"])
        #expect(summary.rollbacks == [.init(version: "43", devices: 2), .init(version: "41", devices: 1)])

        let text = FleetStatusOutput.text(summary, topic: "rcagent/status", limit: nil)
        #expect(text.contains("Activation deferred: 1\nRolled back: 2\n"), "\(text)")
        #expect(
            text.contains("Rollbacks per version (devices that rolled it back or reject it):\n  v43  2\n  v41  1\n"))
        #expect(text.contains("\nActivation deferred (1):\n  a2: v43\n"), "\(text)")
        #expect(
            text.contains(
                "\nRolled back (2):\n  a3: v43 at 2026-11-30T12:00:00Z: health check failed (exit 1)\n  a4: v43 at "),
            "\(text)")

        let json = FleetStatusOutput.json(summary, topic: "s", complete: true, at: Self.t0)
        #expect(json["counts"]?["deferred"] == .integer(1) && json["counts"]?["rolledBack"] == .integer(2))
        #expect(json["rollbacks"]?.compactText == #"[{"version":"43","devices":2},{"version":"41","devices":1}]"#)
        #expect(json["lists"]?["deferred"] == .array([.string("a2")]))
        #expect(FleetStatusOutput.watchLine(summary).hasSuffix(" · deferred 1 · rolled back v43 2, v41 1"))
        #expect(FleetStatusOutput.watchJSON(summary, at: Self.t0)["rollbacks"] == json["rollbacks"])
    }

    @Test func theMemberRoundTripsAndBadOnesAreRefusedByName() throws {
        for report in Self.fleet {
            #expect(try DeviceReport(parsing: Array(report.json.compactText.utf8)) == report)
        }
        let head = #"{"deviceId":"d","online":true,"activation":"#
        let cases: [(String, String)] = [
            (#""yes"}"#, "activation is string, not an object"),
            (#"{"deferred":7}}"#, "activation.deferred is number"),
            (#"{"rejected":"43"}}"#, "activation.rejected is string, not an array"),
            (#"{"rejected":[43]}}"#, "activation.rejected[0] is not a template version"),
            (#"{"lastRollback":{"templateVersion":"4"}}}"#, "activation.lastRollback.at is missing"),
            (#"{"lastRollback":{"at":"2026-11-30T12:00:00Z"}}}"#, "activation.lastRollback.templateVersion is missing"),
        ]
        for (tail, says) in cases {
            do {
                _ = try DeviceReport(parsing: Array((head + tail).utf8))
                Issue.record("accepted \(tail)")
            } catch {
                #expect(error.description.contains(says), "\(error)")
            }
        }
        let many = "[" + (0...256).map { "\"\($0)\"" }.joined(separator: ",") + "]"
        #expect(throws: DeviceReportError.self) {
            try DeviceReport(parsing: Array((head + #"{"rejected":\#(many)}}"#).utf8))
        }
    }
}
