import RCCore
import Testing

@Suite struct DeviceReportTests {
    let report = DeviceReport(
        deviceId: "dAbCdEfGhIjKlMnOpQrStU", online: true, at: Timestamp(iso8601: "2026-11-30T12:00:00Z")!,
        agentVersion: "0.1.0", templateVersion: "42",
        stale: .init(set: true, since: Timestamp(iso8601: "2026-11-30T11:59:00Z")!),
        lastFetch: .init(status: "failure", at: Timestamp(iso8601: "2026-11-30T11:58:00Z")!, error: "HTTP 503"),
        appInstalled: "1.2.3", update: .recommended, activities: 2)

    @Test func writesTheStableNamesAndReadsThemBack() throws {
        let text = report.json.compactText
        #expect(
            text
                == #"{"deviceId":"dAbCdEfGhIjKlMnOpQrStU","online":true,"at":"2026-11-30T12:00:00Z","agentVersion":"0.1.0","templateVersion":"42","stale":{"set":true,"since":"2026-11-30T11:59:00Z"},"lastFetch":{"status":"failure","at":"2026-11-30T11:58:00Z","error":"HTTP 503"},"app":{"installed":"1.2.3","update":"recommended"},"activities":2,"signature":null}"#
        )
        #expect(try DeviceReport(parsing: Array(text.utf8)) == report)
    }

    @Test func theActivationMemberReadsBack() throws {
        var deferred = report
        deferred.activation = DeviceReport.Activation(
            deferred: "43", trial: nil, lastRollback: .init(templateVersion: "41", at: report.at, reason: "timed out"),
            rejected: ["41"])
        let text = deferred.json.compactText
        #expect(
            text.contains(
                #""activation":{"deferred":"43","trial":null,"lastRollback":{"templateVersion":"41","at":"2026-11-30T12:00:00Z","reason":"timed out"},"rejected":["41"]}"#
            ))
        #expect(try DeviceReport(parsing: Array(text.utf8)) == deferred)
        #expect(!deferred.sameState(as: report))
    }

    @Test func aMinimalWillReadsWithDefaults() throws {
        let will = try DeviceReport(parsing: Array(#"{"deviceId":"d1","online":false}"#.utf8))
        #expect(will.online == false && will.templateVersion == nil && will.update == .unknown && will.activities == 0)
    }

    @Test func sameStateIgnoresOnlyTheTime() {
        var later = report
        later.at = later.at + .seconds(5)
        #expect(later.sameState(as: report))
        later.templateVersion = "43"
        #expect(!later.sameState(as: report))
    }

    @Test(arguments: [
        (#"[1]"#, "not a JSON object"),
        (#"{"online":true}"#, "deviceId is missing"),
        (#"{"deviceId":"d","online":"yes"}"#, "online is string"),
        (#"{"deviceId":"d","online":true,"stale":[]}"#, "stale is array"),
        (#"{"deviceId":"d","online":true,"stale":{"set":true,"since":"yesterday"}}"#, "stale.since \"yesterday\""),
        (#"{"deviceId":"d","online":true,"activities":-1}"#, "activities is -1"),
        (#"{"deviceId":"d","online":true,"app":{"update":"maybe"}}"#, "app.update is \"maybe\""),
        (#"{"deviceId":"d","online":true,"templateVersion":7}"#, "templateVersion is number"),
        (#"{"deviceId":"d","#, "invalid JSON"),
        (#"{"deviceId":"d","online":true,"activation":[]}"#, "activation is array"),
        (#"{"deviceId":"d","online":true,"activation":{"deferred":7}}"#, "activation.deferred"),
        (#"{"deviceId":"d","online":true,"activation":{"rejected":"3"}}"#, "activation.rejected is string"),
        (#"{"deviceId":"d","online":true,"activation":{"lastRollback":{"templateVersion":"3"}}}"#, "lastRollback"),
    ])
    func rejectsHostileReportsNamingTheMember(text: String, expected: String) {
        #expect {
            try DeviceReport(parsing: Array(text.utf8))
        } throws: { error in
            "\(error)".contains(expected)
        }
    }

    @Test func rejectsOversizedReportsAndTexts() {
        let big = [UInt8](repeating: 0x20, count: DeviceReport.maximumSize + 1)
        #expect(throws: DeviceReportError.self) { try DeviceReport(parsing: big) }
        let long = String(repeating: "x", count: DeviceReport.maximumTextLength + 1)
        #expect(throws: DeviceReportError.self) {
            try DeviceReport(parsing: Array(#"{"deviceId":"\#(long)","online":true}"#.utf8))
        }
    }
}
