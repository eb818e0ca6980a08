import RCCore
import Testing

@testable import RCAdmin

/// The exporter without a broker or a socket: the families (``FleetMetrics``), the bounds on
/// version labels, `--listen` addresses (``ListenAddress``) and the `--watch` progress line.
@Suite struct FleetMetricsTests {
    static let t0 = Timestamp(iso8601: "2026-11-30T12:00:00Z")!

    static func report(_ id: String, _ version: String?, _ change: (inout DeviceReport) -> Void = { _ in })
        -> DeviceReport
    { .sample(id, version, at: t0, change) }

    static func samples(_ families: [MetricFamily], _ name: String) -> [String: Double] {
        let family = families.first { $0.name == name }
        return Dictionary(
            (family?.samples ?? []).map {
                ($0.labels.map { "\($0.name)=\($0.value)" }.joined(separator: ","), $0.value)
            },
            uniquingKeysWith: +)
    }

    @Test func aFleetBecomesCountsPerVersionStateAndRollback() {
        let summary = FleetSummary(
            reports: [
                Self.report("k1", "43"), Self.report("k2", "43") { $0.online = false },
                Self.report("k3", "42") { $0.stale = .init(set: true, since: Self.t0) },
                Self.report("k4", nil) { $0.update = .required },
            ],
            unreadable: [UnreadableReport(topic: "rcagent/status/x", reason: "invalid JSON")])
        let families = FleetMetrics.families(summary, overCapacity: 2)
        #expect(
            Self.samples(families, "rcagent_fleet_devices") == [
                "template_version=43": 2, "template_version=42": 1, "template_version=": 1,
            ])
        #expect(
            Self.samples(families, "rcagent_fleet_devices_in_state") == [
                "state=online": 3, "state=offline": 1, "state=stale": 1, "state=failing": 0, "state=deferred": 0,
                "state=rolled_back": 0, "state=update_required": 1, "state=update_recommended": 0,
            ])
        #expect(Self.samples(families, "rcagent_fleet_newest_template_version") == ["": 43])
        #expect(Self.samples(families, "rcagent_fleet_devices_on_newest_version") == ["": 2])
        #expect(Self.samples(families, "rcagent_fleet_reports_unreadable") == ["": 1])
        #expect(Self.samples(families, "rcagent_fleet_reports_over_capacity") == ["": 2])
        #expect(Self.samples(families, "rcagent_fleet_devices_reporting") == ["": 4])
        #expect(!families.contains { $0.name.hasPrefix("rcagent_fleet_device_") }, "no per-device series by default")
        let perDevice = FleetMetrics.families(summary, perDevice: true)
        #expect(Self.samples(perDevice, "rcagent_fleet_device_online")["device_id=k2"] == 0)
        #expect(Self.samples(perDevice, "rcagent_fleet_device_info")["device_id=k4,template_version="] == 1)
    }

    @Test func versionsPastTheLimitAreCountedAsOther() {
        // 5,000 hostile version texts: 3 series of their own (the newest), the rest in one.
        var counts = (0..<5_000).map { FleetSummary.VersionCount(version: "junk-\($0)", devices: 1) }
        counts.insert(FleetSummary.VersionCount(version: "99", devices: 7), at: 0)
        counts.append(FleetSummary.VersionCount(version: nil, devices: 2))
        let series = FleetMetrics.bounded(counts, limit: 3)
        #expect(
            series == [
                .init(label: "99", devices: 7), .init(label: "junk-0", devices: 1), .init(label: "junk-1", devices: 1),
                .init(label: "other", devices: 4_998), .init(label: "", devices: 2),
            ])
    }

    @Test func longVersionsAreCutAndThoseThatThenReadTheSameAreSummed() {
        let long = String(repeating: "9", count: 1_000)
        let series = FleetMetrics.bounded(
            [.init(version: long + "1", devices: 1), .init(version: long + "2", devices: 2)], limit: 10)
        let label = TextEscaping.truncated(long, maxBytes: FleetMetrics.labelBytes)
        #expect(label.utf8.count <= 64 && series == [.init(label: label, devices: 3)], "\(series)")
    }

    @Test func versionsThatReadAsTheReservedLabelsMakeNoSecondSeries() {
        // A device may name its version "other" or "" (or reject one so named): the page must still
        // hold each label set once a family, or Prometheus drops the samples it cannot tell apart.
        // Text sorts by its bytes: "" and "other" take the two places, "zzz" and "zzz2" go past them.
        var reports = [Self.report("h1", "other"), Self.report("h2", ""), Self.report("h3", nil)]
        reports += ["zzz", "zzz2"].map { Self.report($0, $0) }
        reports.append(
            Self.report("h4", "zzz") {
                $0.activation = .init(
                    deferred: nil, trial: nil, lastRollback: nil, rejected: ["", "other", "zzz", "zzz2"])
            })
        let families = FleetMetrics.families(FleetSummary(reports: reports), versionLimit: 2, perDevice: true)
        for family in families {
            var seen = Set<[String]>()
            for sample in family.samples {
                let labels = sample.labels.flatMap { [$0.name, $0.value] }
                #expect(seen.insert(labels).inserted, "\(family.name) has \(labels) twice")
            }
        }
        let devices = Self.samples(families, "rcagent_fleet_devices")
        #expect(devices.values.reduce(0, +) == Double(reports.count), "\(devices)")
    }

    @Test func aNewestVersionADoubleCannotHoldHasNoSample() {
        // A report may carry any number of digits: 400 of them made +Inf, 17 another number.
        for version in [String(repeating: "9", count: 400), "12345678901234567"] {
            let families = FleetMetrics.families(FleetSummary(reports: [Self.report("k1", version)]))
            #expect(Self.samples(families, "rcagent_fleet_newest_template_version").isEmpty, "\(version)")
        }
        let families = FleetMetrics.families(FleetSummary(reports: [Self.report("k1", "123456789012345")]))
        #expect(Self.samples(families, "rcagent_fleet_newest_template_version") == ["": 123_456_789_012_345])
    }

    @Test func aPageFromHostileReportsKeepsOneSampleALine() {
        let summary = FleetSummary(reports: [Self.report("a\"b\\c\nd", "4\"5\n\\x} 1\n# x")])
        let page = PrometheusText.render(FleetMetrics.families(summary, perDevice: true))
        for line in page.split(separator: "\n") {
            #expect(
                line.hasPrefix("# HELP rcagent_fleet_") || line.hasPrefix("# TYPE rcagent_fleet_")
                    || line.hasPrefix("rcagent_fleet_"), "\(line)")
        }
        #expect(page.contains(#"rcagent_fleet_device_online{device_id="a\"b\\c\nd"} 1"#), "\(page)")
    }

    // MARK: - --listen

    @Test(arguments: [
        ("127.0.0.1:9800", ListenAddress.Family.v4, "127.0.0.1", 9800), ("0.0.0.0:0", .v4, "0.0.0.0", 0),
        ("[::1]:9800", .v6, "::1", 9800), ("[::]:65535", .v6, "::", 65535),
    ])
    func addressesAreTaken(_ text: String, _ family: ListenAddress.Family, _ host: String, _ port: Int) throws {
        let address = try ListenAddress.parse(text).get()
        #expect(address == ListenAddress(family: family, host: host, port: UInt16(port)))
        #expect(address.text == text)
    }

    @Test(arguments: [
        "", ":9800", "localhost:9800", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:+80", "::1:80",
        "[::1]", "[::1]80", "[::1:80", "[localhost]:80", "1.2.3:80", "127.0.0.1:9800\n", "127.0.0.1 :80",
    ])
    func otherTextsAreRefused(_ text: String) {
        guard case let .failure(error) = ListenAddress.parse(text) else {
            Issue.record("\(text.debugDescription) was taken")
            return
        }
        #expect(error.description.hasPrefix("--listen must be ADDRESS:PORT"))
        #expect(!error.description.contains("\n"), "escaped: \(error.description)")
    }

    // MARK: - The --watch progress line

    @Test func theProgressLineCountsOnlineDevicesOnTheNewestVersion() {
        let summary = FleetSummary(reports: [
            Self.report("k1", "43"), Self.report("k2", "43") { $0.online = false }, Self.report("k3", "42"),
            Self.report("k4", "42") { $0.stale = .init(set: true, since: Self.t0) },
        ])
        #expect(
            FleetStatusOutput.progressLine(summary) == "v43 on 1/3 online · rolled back 0 · stale 1 · offline 1")
        #expect(FleetStatusOutput.progressLine(summary, width: 12) == "v43 on 1/3 o")
        let none = FleetSummary(reports: [Self.report("k1", nil)])
        #expect(FleetStatusOutput.progressLine(none) == "no version · 1 online · rolled back 0 · stale 0 · offline 0")
        let hostile = FleetSummary(reports: [Self.report("k1", "\u{1b}[2J7")])
        #expect(!FleetStatusOutput.progressLine(hostile).unicodeScalars.contains("\u{1b}"))
    }
}
