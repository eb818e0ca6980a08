import RCCore
import Testing

/// The `activation` member of `status --json` and of the device report, and the `rollback` request.
@Suite struct ActivationStatusTests {
    let at = Timestamp(iso8601: "2026-12-02T01:00:00Z")!

    @Test func statusJSONHasTheStableNames() {
        let status = ActivationStatus(
            trial: .init(templateVersion: "9", since: at),
            lastRollback: .init(templateVersion: "8", at: at, reason: "health check failed (exit 3)"), rejected: ["8"])
        #expect(
            status.json.compactText
                == #"{"deferred":null,"trial":{"templateVersion":"9","since":"2026-12-02T01:00:00Z"},"lastRollback":{"templateVersion":"8","at":"2026-12-02T01:00:00Z","reason":"health check failed (exit 3)"},"rejected":["8"]}"#
        )
        #expect(
            ActivationStatus().json.compactText
                == #"{"deferred":null,"trial":null,"lastRollback":null,"rejected":[]}"#)
        #expect(status.textLines.contains("rejected:     8"))
    }

    @Test func theReportCarriesVersionsAndReadsThemBack() throws {
        let activation = ActivationStatus(
            trial: .init(templateVersion: "9", since: at),
            lastRollback: .init(templateVersion: "8", at: at, reason: "timed out"),
            rejected: (1...30).map { "\($0)" })
        let report = DeviceReport(
            deviceId: "d1", online: true, at: at, agentVersion: "0.1.0", templateVersion: "9",
            stale: .init(set: false, since: nil), lastFetch: .init(status: "success", at: at, error: nil),
            appInstalled: nil, update: .none, activities: 0, activation: activation.report)
        let json = report.json
        #expect(
            json["activation"]?.compactText
                == #"{"deferred":null,"trial":"9","lastRollback":{"templateVersion":"8","at":"2026-12-02T01:00:00Z","reason":"timed out"},"rejected":["#
                + (11...30).map { "\"\($0)\"" }.joined(separator: ",") + "]}",
            "only the newest 20 rejected versions")
        let read = try DeviceReport(parsing: Array(json.compactText.utf8))
        #expect(
            read.activation
                == DeviceReport.Activation(
                    deferred: nil, trial: "9", lastRollback: .init(templateVersion: "8", at: at, reason: "timed out"),
                    rejected: (11...30).map { "\($0)" }))
        #expect(try DeviceReport(parsing: Array(#"{"deviceId":"d1","online":true}"#.utf8)).activation == nil)
    }

    @Test func aReportWithTooManyRejectedVersionsIsRefusedByName() {
        let rejected = (1...(DeviceReport.Activation.maximumRejected + 1)).map { "\"\($0)\"" }.joined(separator: ",")
        let text = #"{"deviceId":"d1","online":true,"activation":{"rejected":["# + rejected + "]}}"
        #expect(throws: DeviceReportError.self) { try DeviceReport(parsing: Array(text.utf8)) }
        let wrongType = #"{"deviceId":"d1","online":true,"activation":{"rejected":[5]}}"#
        #expect(throws: DeviceReportError.self) { try DeviceReport(parsing: Array(wrongType.utf8)) }
    }

    @Test func rollbackRequestsParseAndChangeState() throws {
        #expect(try ControlRequest.parse(Array(#"{"op":"rollback"}"#.utf8)) == .rollback(version: nil))
        #expect(try ControlRequest.parse(Array(#"{"op":"rollback","version":"41"}"#.utf8)) == .rollback(version: "41"))
        #expect(
            try ControlRequest.parse(Array(ControlRequest.rollback(version: "7").json.compactText.utf8))
                == .rollback(version: "7"))
        #expect(ControlRequest.rollback(version: nil).changesState)
        #expect(throws: ControlError.self) { try ControlRequest.parse(Array(#"{"op":"rollback","version":41}"#.utf8)) }
        let response = RollbackResponse(templateVersion: "41", changedKeys: ["url"])
        #expect(try RollbackResponse.reply(response.json).get() == response)
    }
}
