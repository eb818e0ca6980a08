import RCCore
import TestSupport
import Testing

/// ``DeviceMetrics``: what each value of the agent's state becomes in the metrics file, the names
/// dashboards and alerts rely on, and Prometheus' own lint of the whole file.
@Suite struct DeviceMetricsTests {
    static let t0 = Timestamp(milliseconds: 1_764_633_600_500)

    static func report(
        templateVersion: String? = "42", stale: Bool = false, update: DeviceReport.Update = .none,
        signature: DeviceReport.Signature? = nil, activation: DeviceReport.Activation? = nil
    ) -> DeviceReport {
        DeviceReport(
            deviceId: "dev", online: true, at: t0, agentVersion: "1.2.3", templateVersion: templateVersion,
            stale: DeviceReport.Stale(set: stale, since: stale ? t0 : nil),
            lastFetch: DeviceReport.LastFetch(status: "failure", at: t0, error: "boom"), appInstalled: "1.0",
            update: update, activities: 0, signature: signature, activation: activation)
    }

    static func metrics(_ report: DeviceReport = report(), pushConnected: Bool? = true) -> DeviceMetrics {
        DeviceMetrics(
            report: report, lastFetchSuccess: t0, activationPending: false, activities: [.active: 2, .ended: 1],
            pushConnected: pushConnected,
            counters: DeviceMetrics.Counters(
                fetches: ["success": 5, "failure": 2], activations: 4, rollbacks: 1, deferrals: 3, staleMarks: 6),
            startTime: t0)
    }

    static func samples(_ metrics: DeviceMetrics) -> Set<String> {
        Set(metrics.text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map(String.init))
    }

    @Test func theNamesDashboardsRelyOnAreThere() {
        let activation = DeviceReport.Activation(deferred: "43", trial: nil, lastRollback: nil, rejected: [])
        let samples = Self.samples(Self.metrics(Self.report(stale: true, activation: activation)))
        for line in [
            "rcagent_template_version 42", "rcagent_stale 1",
            "rcagent_last_fetch_success_timestamp_seconds 1764633600.5",
            "rcagent_rollbacks_total 1", "rcagent_activation_deferred 1",
        ] {
            #expect(samples.contains(line), "\(line) not in \(samples)")
        }
    }

    @Test func mapsEachValue() {
        let samples = Self.samples(Self.metrics())
        for line in [
            #"rcagent_build_info{version="1.2.3"} 1"#, "rcagent_start_time_seconds 1764633600.5",
            #"rcagent_template_info{template_version="42"} 1"#, "rcagent_stale 0",
            #"rcagent_fetches_total{result="success"} 5"#, #"rcagent_fetches_total{result="no-change"} 0"#,
            #"rcagent_fetches_total{result="failure"} 2"#, #"rcagent_fetches_total{result="throttled"} 0"#,
            #"rcagent_last_fetch_result{result="failure"} 1"#, #"rcagent_last_fetch_result{result="success"} 0"#,
            "rcagent_last_fetch_timestamp_seconds 1764633600.5", "rcagent_activations_total 4",
            "rcagent_activation_deferrals_total 3", "rcagent_stale_marks_total 6", "rcagent_activation_pending 0",
            "rcagent_activation_deferred 0", "rcagent_activation_trial 0", "rcagent_rejected_versions 0",
            #"rcagent_app_update_pending{kind="recommended"} 0"#, #"rcagent_app_update_pending{kind="required"} 0"#,
            "rcagent_app_update_unknown 0", #"rcagent_activities{state="active"} 2"#,
            #"rcagent_activities{state="stale"} 0"#, #"rcagent_activities{state="ended"} 1"#,
            #"rcagent_push_connected{channel="mqtt"} 1"#,
        ] {
            #expect(samples.contains(line), "\(line) not in \(samples)")
        }
        // What is not known has no sample (not a made-up 0).
        #expect(!samples.contains { $0.hasPrefix("rcagent_stale_since_timestamp_seconds") })
        #expect(!samples.contains { $0.hasPrefix("rcagent_signature_") })
        #expect(!samples.contains { $0.hasPrefix("rcagent_last_rollback_timestamp_seconds") })
    }

    @Test func safeActivationSignatureAndUpdates() {
        let rollback = DeviceReport.Activation.Rollback(templateVersion: "41", at: Self.t0, reason: "exit 1")
        let report = Self.report(
            update: .required, signature: DeviceReport.Signature(version: 12, expires: Self.t0 + .seconds(3600)),
            activation: DeviceReport.Activation(
                deferred: nil, trial: "42", lastRollback: rollback, rejected: ["41", "40"]))
        let samples = Self.samples(Self.metrics(report, pushConnected: false))
        for line in [
            "rcagent_activation_trial 1", "rcagent_last_rollback_timestamp_seconds 1764633600.5",
            "rcagent_rejected_versions 2", #"rcagent_app_update_pending{kind="required"} 1"#,
            #"rcagent_app_update_pending{kind="recommended"} 0"#, "rcagent_signature_version 12",
            "rcagent_signature_expiry_timestamp_seconds 1764637200.5", #"rcagent_push_connected{channel="mqtt"} 0"#,
        ] {
            #expect(samples.contains(line), "\(line) not in \(samples)")
        }
        #expect(Self.samples(Self.metrics(Self.report(update: .unknown))).contains("rcagent_app_update_unknown 1"))
        #expect(!Self.samples(Self.metrics(pushConnected: nil)).contains { $0.hasPrefix("rcagent_push_connected") })
    }

    /// A version longer than a `Double` holds exactly has no number, but its text.
    @Test(arguments: [("42", true), ("123456789012345", true), ("1234567890123456", false), ("", false)])
    func templateVersionAsANumber(_ version: String, _ numeric: Bool) {
        let samples = Self.samples(Self.metrics(Self.report(templateVersion: version)))
        #expect(samples.contains("rcagent_template_version \(version)") == numeric)
    }

    @Test func noTemplateNoVersionSamples() {
        let samples = Self.samples(Self.metrics(Self.report(templateVersion: nil)))
        #expect(!samples.contains { $0.hasPrefix("rcagent_template_") })
    }

    /// Every name follows the conventions: valid, `rcagent_`, counters end in `_total`, no counter
    /// is a gauge's name; and the file passes `promtool check metrics`.
    @Test func namesFollowPrometheusConventionsAndPromtoolAgrees() throws {
        let report = Self.report(
            stale: true, update: .recommended, signature: DeviceReport.Signature(version: 3, expires: Self.t0),
            activation: DeviceReport.Activation(
                deferred: "43", trial: "42",
                lastRollback: .init(templateVersion: "41", at: Self.t0, reason: "x"), rejected: ["41"]))
        let metrics = Self.metrics(report)
        for family in metrics.families {
            #expect(PrometheusText.isValidMetricName(family.name) && family.name.hasPrefix("rcagent_"))
            #expect(family.name.hasSuffix("_total") == (family.kind == .counter), "\(family.name)")
            for sample in family.samples {
                #expect(sample.labels.allSatisfy { PrometheusText.isValidLabelName($0.name) })
            }
        }
        #expect(Set(metrics.families.map(\.name)).count == metrics.families.count)
        let process = try Subprocess("/usr/bin/promtool", ["check", "metrics"], input: true)
        process.write(metrics.text)
        process.closeInput()
        let result = process.finish()
        #expect(
            result.status == 0 && result.stdout.isEmpty && result.stderr.isEmpty, "\(result.stdout)\(result.stderr)")
    }
}
