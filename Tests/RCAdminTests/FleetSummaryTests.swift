import RCCore
import RCMQTT
import Testing

@testable import RCAdmin

/// `fleet status` without a broker: the counting (``FleetSummary``), the reading of each retained
/// message (``FleetInbox``), when a retained set counts as delivered (``RetainedSetProgress``) and
/// the printed forms (``FleetStatusOutput``).
@Suite struct FleetSummaryTests {
    static let t0 = Timestamp(iso8601: "2026-11-30T12:00:00Z")!

    /// A healthy device on `version`; `change` makes it otherwise.
    static func report(
        _ id: String, _ version: String?, _ change: (inout DeviceReport) -> Void = { _ in }
    ) -> DeviceReport { .sample(id, version, at: t0, change) }

    /// Ten devices: 43 is the newest version; one of each trouble.
    static let fleet: [DeviceReport] = [
        report("d01", "43"), report("d02", "43"), report("d03", "43"), report("d04", "43"),
        report("d05", "43") { $0.stale = .init(set: true, since: t0) },
        report("d06", "42") { $0.online = false },
        report("d07", "42") { $0.lastFetch = .init(status: "failure", at: t0, error: "HTTP 503") },
        report("d08", "9") { $0.update = .required },
        report("d09", nil) { $0.update = .recommended },
        report("d10", "beta") {
            $0.update = .unknown; $0.lastFetch.error = "timed out"
        },
    ]

    @Test func countsAMixedFleet() {
        let summary = FleetSummary(reports: Self.fleet.reversed())
        #expect(summary.devices == 10)
        #expect(summary.online.count == 9 && summary.offline == ["d06"])
        #expect(
            summary.versions == [
                .init(version: "43", devices: 5), .init(version: "42", devices: 2), .init(version: "9", devices: 1),
                .init(version: "beta", devices: 1), .init(version: nil, devices: 1),
            ])
        #expect(summary.newestVersion == "43" && summary.onNewest == 5 && summary.percent(5) == 50)
        #expect(summary.stale == ["d05"])
        #expect(summary.failing == ["d07", "d10"], "a failure status or an error")
        #expect(summary.requiredUpdate == ["d08"] && summary.recommendedUpdate == ["d09"])
        #expect(summary.updateUnknown == ["d10"])
        // Offline, older, none and non-numeric alike: none of them has 43.
        #expect(summary.lagging == ["d06", "d07", "d08", "d09", "d10"])
        #expect(summary.reports.map(\.deviceId) == Self.fleet.map(\.deviceId), "ordered by id")
    }

    @Test func versionsCompareAsNumbersOfAnyLength() {
        let versions = ["9", "10", "010", "99999999999999999999999", "", "v2", "alpha", "0"]
        let sorted = versions.map(Optional.some).sorted { TemplateVersionOrder.precedes($0, $1) }
        #expect(sorted == ["99999999999999999999999", "010", "10", "9", "0", "", "alpha", "v2"])
        #expect(TemplateVersionOrder.precedes("1", nil) && TemplateVersionOrder.precedes("x", nil))
        #expect(!TemplateVersionOrder.precedes(nil, "x") && !TemplateVersionOrder.precedes(nil, nil))
        // "010" and "10" are one version: neither lags behind the other.
        let summary = FleetSummary(reports: [Self.report("a", "10"), Self.report("b", "010")])
        #expect(summary.lagging.isEmpty && summary.onNewest == 2)
    }

    @Test func withoutNumberedVersionsNothingLags() {
        let summary = FleetSummary(reports: [Self.report("a", nil), Self.report("b", "beta")])
        #expect(summary.newestVersion == nil && summary.lagging.isEmpty && summary.onNewest == 0)
        #expect(FleetSummary(reports: []).percent(0) == 0)
    }

    // MARK: - Reading retained messages

    static func bytes(_ report: DeviceReport) -> [UInt8] { Array(report.json.compactText.utf8) }

    @Test func theInboxKeepsTheLatestReportPerTopicAndForgetsClearedOnes() {
        var inbox = FleetInbox(base: "fleet/status")
        func take(_ topic: String, _ payload: [UInt8]) -> Bool { inbox.receive(topic: topic, payload: payload) }
        let first = take("fleet/status/d01", Self.bytes(Self.report("d01", "42")))
        let again = take("fleet/status/d01", Self.bytes(Self.report("d01", "42")))
        let newer = take("fleet/status/d01", Self.bytes(Self.report("d01", "43")))
        #expect(first && !again && newer, "a repeated report changes nothing")
        #expect(inbox.summary.versions == [.init(version: "43", devices: 1)])
        let cleared = take("fleet/status/d01", [])
        let clearedAgain = take("fleet/status/d01", [])
        #expect(cleared && !clearedAgain && inbox.isEmpty, "an empty retained message clears the report")
        // Another run's marker, and topics outside the base, are nobody's report.
        let marker = take("fleet/status/\(FleetInbox.markerPrefix)1f", Array("x".utf8))
        let outside = take("fleet/other/d01", Self.bytes(Self.report("d01", "42")))
        #expect(!marker && !outside && inbox.isEmpty)
    }

    @Test func hostileMessagesAreUnreadableWithTheirReason() {
        var inbox = FleetInbox(base: "s")
        let escape = "\u{1b}]0;owned\u{7}"
        inbox.receive(topic: "s/a", payload: Array("not json".utf8))
        inbox.receive(topic: "s/b", payload: Array(#"{"deviceId":"b","online":"yes"}"#.utf8))
        inbox.receive(topic: "s/c", payload: [UInt8](repeating: 0x20, count: 16 << 10 + 1))
        inbox.receive(topic: "s/d", payload: Self.bytes(Self.report("e", "43")))
        inbox.receive(topic: "s/f/g", payload: Self.bytes(Self.report("g", "43")))
        // The JSON escapes \u001b and \u0007: the parsed text holds the raw ESC and BEL.
        inbox.receive(
            topic: "s/h",
            payload: Array(#"{"deviceId":"h","online":true,"app":{"update":"\u001b]0;owned\u0007"}}"#.utf8))
        inbox.receive(topic: "s/ok", payload: Self.bytes(Self.report("ok", "43")))
        let summary = inbox.summary
        #expect(summary.devices == 1 && summary.reports.first?.deviceId == "ok")
        let reasons = Dictionary(uniqueKeysWithValues: summary.unreadable.map { ($0.topic, $0.reason) })
        #expect(reasons.count == 6)
        #expect(reasons["s/a"]?.contains("invalid JSON") == true)
        #expect(reasons["s/b"]?.contains("online is string") == true)
        #expect(reasons["s/c"]?.contains("over the 16384-byte limit") == true)
        #expect(reasons["s/d"] == #"the report's deviceId "e" is not the topic's last level"#)
        #expect(reasons["s/f/g"]?.contains("more than one level") == true)
        #expect(reasons["s/h"]?.contains(escape) == true, "kept as it is; the output escapes it")
        let text = FleetStatusOutput.text(summary, topic: "s", limit: nil)
        #expect(!text.unicodeScalars.contains { $0 == "\u{1b}" || $0 == "\u{7}" })
        #expect(text.contains(#"\x1b]0;owned\x07"#), "\(text)")
    }

    @Test func theInboxIsBounded() {
        var inbox = FleetInbox(base: "s", capacity: 2)
        for id in ["a", "b", "c", "d"] { inbox.receive(topic: "s/\(id)", payload: Self.bytes(Self.report(id, "1"))) }
        #expect(inbox.count == 2 && inbox.overflow == 2)
        // A kept topic still takes updates.
        let updated = inbox.receive(topic: "s/a", payload: Self.bytes(Self.report("a", "2")))
        #expect(
            updated && inbox.summary.versions == [.init(version: "2", devices: 1), .init(version: "1", devices: 1)])
        // A topic longer than any device id is kept under a bounded key.
        let long = "s/" + String(repeating: "x", count: 100_000)
        var wide = FleetInbox(base: "s")
        wide.receive(topic: long, payload: Array("{}".utf8))
        #expect(wide.count == 1)
        #expect((wide.summary.unreadable.first?.topic.utf8.count ?? .max) <= FleetInbox.shownBytes)
    }

    // MARK: - When the retained set is in

    @Test func theMarkerEndsTheRetainedSetAfterASettlePeriod() {
        let start = ContinuousClock.now
        var progress = RetainedSetProgress()
        #expect(!progress.isComplete(at: start + .seconds(60)), "nothing before the SUBACKs")
        progress.subscribed(at: start)
        progress.message(at: start + .milliseconds(10))
        progress.marker(at: start + .milliseconds(20))
        #expect(!progress.isComplete(at: start + .milliseconds(200)))
        #expect(progress.isComplete(at: start + .milliseconds(270)))
        // A message after the marker (a broker that does not keep the order) extends the settling...
        progress.message(at: start + .milliseconds(260))
        #expect(!progress.isComplete(at: start + .milliseconds(400)))
        #expect(progress.isComplete(at: start + .milliseconds(510)))
        // ...but not beyond the limit, whatever keeps coming.
        progress.message(at: start + .milliseconds(2_000))
        #expect(progress.isComplete(at: start + .milliseconds(2_020)))
    }

    @Test func withoutTheMarkerAQuietPeriodEndsIt() {
        let start = ContinuousClock.now
        var progress = RetainedSetProgress()
        progress.subscribed(at: start)
        #expect(!progress.isComplete(at: start + .milliseconds(1_900)))
        progress.message(at: start + .milliseconds(1_900))
        #expect(!progress.isComplete(at: start + .milliseconds(3_800)))
        #expect(progress.isComplete(at: start + .milliseconds(3_900)))
    }

    // MARK: - Output

    @Test func theTextReportShowsCountsThenCappedLists() {
        let summary = FleetSummary(reports: Self.fleet)
        let text = FleetStatusOutput.text(summary, topic: "rcagent/status", limit: 2)
        let expectedHead = """
            Devices: 10 (online 9, offline 1)
            Template versions (newest first):
              v43    5  50%
              v42    2  20%
              v9     1  10%
              vbeta  1  10%
              none   1  10%
            Newest version: v43, on 5 (50%)
            Stale: 1
            Failing fetches: 2
            Updates pending: 1 required, 1 recommended
            Update state unknown: 1
            Lagging behind v43: 5
            Activation deferred: 0
            Rolled back: 0

            """
        #expect(text.hasPrefix(expectedHead), "\(text)")
        #expect(text.contains("\nLagging behind v43 (5):\n  d06: v42\n  d07: v42\n  ... and 3 more\n"), "\(text)")
        #expect(
            text.contains("\nFailing fetches (2):\n  d07: failure: HTTP 503\n  d10: success: timed out\n"), "\(text)")
        #expect(text.contains("\nOffline (1):\n  d06\n"))
        let all = FleetStatusOutput.text(summary, topic: "rcagent/status", limit: nil)
        #expect(all.contains("  d10\n") && !all.contains("more"))
        #expect(
            FleetStatusOutput.text(FleetSummary(reports: []), topic: "x/y", limit: nil).hasPrefix(
                "No device reports on x/y/+"))
    }

    @Test func theJSONDocumentHasCountsListsAndReports() throws {
        let summary = FleetSummary(reports: Self.fleet, unreadable: [.init(topic: "s/x", reason: "bad")])
        let json = FleetStatusOutput.json(summary, topic: "s", complete: true, at: Self.t0)
        #expect(json["newestVersion"] == .string("43") && json["complete"] == .bool(true))
        #expect(json["counts"]?["devices"] == .integer(10) && json["counts"]?["lagging"] == .integer(5))
        #expect(json["counts"]?["unreadable"] == .integer(1) && json["counts"]?["failing"] == .integer(2))
        #expect(json["lists"]?["stale"] == .array([.string("d05")]))
        #expect(json["unreadable"] == .array([.object([("topic", .string("s/x")), ("reason", .string("bad"))])]))
        guard case let .array(reports)? = json["devices"] else { throw TemplateError("no devices") }
        #expect(reports.count == 10)
        #expect(try DeviceReport(parsing: Array(reports[9].compactText.utf8)) == Self.fleet[9])
        guard case let .array(versions)? = json["versions"] else { throw TemplateError("no versions") }
        #expect(versions.last?.compactText == #"{"version":null,"devices":1,"percent":10}"#)
        let line = FleetStatusOutput.watchJSON(summary, at: Self.t0)
        #expect(line["at"] == .string("2026-11-30T12:00:00Z") && line["counts"] == json["counts"])
        #expect(line["devices"] == nil, "a watch line carries counts, not the reports")
    }

    @Test func theWatchLineIsShortAndStable() {
        let summary = FleetSummary(reports: Self.fleet)
        #expect(
            FleetStatusOutput.watchLine(summary)
                == "devices 10 online 9 · v43 5 (50%) · stale 1 · failing 2 · offline 1 · required update 1")
        #expect(FleetStatusOutput.clock(Self.t0 + .seconds(61)) == "12:01:01")
        #expect(FleetStatusOutput.watchLine(FleetSummary(reports: [])).hasPrefix("devices 0 online 0 · no version"))
    }
}

/// `fleet status`'s options: checked before anything connects.
@Suite struct FleetStatusOptionsTests {
    func settings(_ arguments: [String]) throws(AdminFailure) -> ReportCollector.Settings {
        try FleetStatusCommand.settings(ParsedOptions(arguments, options: FleetStatusCommand.command.options))
    }

    func usageError(_ arguments: [String]) -> String? {
        do {
            _ = try settings(arguments)
            _ = try FleetStatusCommand.listLimit(
                ParsedOptions(arguments, options: FleetStatusCommand.command.options))
            return nil
        } catch {
            return error.kind == .usage ? error.message : "not a usage error: \(error.message)"
        }
    }

    @Test func defaultsAndValues() throws {
        let plain = try settings([])
        #expect(plain.url == "mqtt://localhost" && plain.topic == "rcagent/status")
        #expect(plain.timeout == .seconds(5) && plain.capacity == 200_000)
        #expect(try settings(["--watch"]).timeout == .seconds(30))
        let given = try settings(["--topic", "site/a/status", "--timeout", "1min", "--max-devices", "10"])
        #expect(given.topic == "site/a/status" && given.timeout == .seconds(60) && given.capacity == 10)
        let options = try ParsedOptions(["--limit", "0"], options: FleetStatusCommand.command.options)
        #expect(try FleetStatusCommand.listLimit(options) == 0)
    }

    /// The login options are RCMQTT's credentials, field for field (the daemon fills the same type).
    @Test func loginOptionsAreTheMQTTCredentials() throws {
        let given = try settings([
            "--username", "ops", "--password-file", "/p", "--ca-file", "/ca.pem", "--cert-file", "/c.pem",
            "--key-file", "/k.pem",
        ])
        #expect(
            given.login.credentials
                == MQTTCredentials(
                    username: "ops", passwordFile: "/p", caFile: "/ca.pem", certificateFile: "/c.pem",
                    keyFile: "/k.pem"))
        #expect(!given.login.isEmpty)
        #expect(try settings([]).login.isEmpty)
    }

    @Test(arguments: [
        (["--topic", "a/+"], "--topic must be a topic without the MQTT wildcards"),
        (["--topic", "a/"], "without a trailing /"),
        (["--topic", ""], "--topic must be"),
        (["--timeout", "soon"], "--timeout must be a duration"),
        (["--timeout", "0"], "--timeout must be a duration"),
        (["--password-file", "/dev/null"], "--password-file goes with --username USER"),
        (["--cert-file", "/c.pem"], "--cert-file and --key-file go together"),
        (["--key-file", "/k.pem"], "--cert-file and --key-file go together"),
        (["--max-devices", "0"], "--max-devices must be a whole number"),
        (["--all", "--limit", "2"], "--all and --limit N exclude each other"),
    ])
    func badValuesAreUsageErrors(arguments: [String], expected: String) {
        let message = usageError(arguments)
        #expect(message?.hasPrefix(expected) == true || message?.contains(expected) == true, "\(message ?? "accepted")")
    }
}
