import Foundation
import RCCore
import TestSupport
import Testing

/// The ready-made alert rules (examples/prometheus) and Grafana dashboard (examples/grafana): the
/// rules pass `promtool check rules` and their own unit tests (`promtool test rules`, each alert
/// fired and not fired on made-up series), and every metric an expression names is one the agent
/// writes or the fleet exporter serves.
@Suite struct PrometheusExampleTests {
    static let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("examples")
    static var rules: String { examples.appendingPathComponent("prometheus/rcagent-rules.yml").path }
    static var dashboard: String { examples.appendingPathComponent("grafana/rcagent-dashboard.json").path }

    /// What `rcadmin fleet exporter` serves (its stable names).
    static let fleetNames: Set<String> = [
        "rcagent_fleet_devices", "rcagent_fleet_devices_in_state", "rcagent_fleet_reports_unreadable",
    ]

    /// Every name the device's metrics file can hold (the families exist whether or not they have a
    /// sample), and the fleet exporter's.
    static var knownNames: Set<String> {
        let report = DeviceReport(
            deviceId: "d", online: true, at: Timestamp(milliseconds: 0), agentVersion: "1", templateVersion: "1",
            stale: .init(set: false, since: nil), lastFetch: .init(status: nil, at: nil, error: nil), appInstalled: nil,
            update: .none, activities: 0)
        let metrics = DeviceMetrics(
            report: report, lastFetchSuccess: nil, activationPending: false, activities: [:], pushConnected: nil,
            counters: .init(), startTime: Timestamp(milliseconds: 0))
        return Set(metrics.families.map(\.name)).union(fleetNames)
    }

    /// The `rcagent_...` names in `text`.
    static func metricNames(_ text: String) throws -> Set<String> {
        let pattern = try Regex(#"rcagent_[a-zA-Z0-9_:]+"#)
        return Set(text.matches(of: pattern).map { String(text[$0.range]) })
    }

    @Test func theRulesPassPromtoolsCheckAndTheirUnitTests() throws {
        let check = try runProcess("/usr/bin/promtool", ["check", "rules", Self.rules])
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        let directory = Self.examples.appendingPathComponent("prometheus").path
        let test = try runProcess("/usr/bin/promtool", ["test", "rules", "rcagent-rules.test.yml"], in: directory)
        #expect(test.status == 0 && test.stdout.contains("SUCCESS"), "\(test.stdout)\(test.stderr)")
    }

    @Test func theRulesNameOnlyMetricsThatExist() throws {
        let names = try Self.metricNames(String(contentsOfFile: Self.rules, encoding: .utf8))
        #expect(names.contains("rcagent_stale") && names.contains("rcagent_rollbacks_total"))
        #expect(names.subtracting(Self.knownNames).isEmpty, "unknown: \(names.subtracting(Self.knownNames))")
    }

    @Test func everyDashboardPanelQueriesMetricsThatExist() throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: Self.dashboard))
        let dashboard = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let panels = try #require(dashboard["panels"] as? [[String: Any]])
        #expect(panels.count >= 10)
        var ids: Set<Int> = []
        var used: Set<String> = []
        for panel in panels {
            let title = panel["title"] as? String ?? "?"
            let id = try #require(panel["id"] as? Int, "\(title)")
            #expect(ids.insert(id).inserted, "duplicate panel id \(id)")
            let targets = try #require(panel["targets"] as? [[String: Any]], "\(title)")
            #expect(!targets.isEmpty, "\(title)")
            for target in targets {
                let expr = try #require(target["expr"] as? String, "\(title)")
                let names = try Self.metricNames(expr)
                #expect(!names.isEmpty, "\(title): \(expr) names no rcagent metric")
                #expect(names.subtracting(Self.knownNames).isEmpty, "\(title): \(expr)")
                used.formUnion(names)
            }
        }
        // The names the SPEC fixes for dashboards are charted.
        for name in [
            "rcagent_stale", "rcagent_rollbacks_total", "rcagent_activation_deferred", "rcagent_fleet_devices",
        ] {
            #expect(used.contains(name), "\(name) is on no panel")
        }
    }
}
