import RCCore

/// The fleet's aggregates as Prometheus metric families: what `rcadmin fleet exporter` serves,
/// computed from a ``FleetSummary`` alone (no clock, no broker), so every rule is unit-tested.
///
/// Cardinality is an attack surface: any device (or anyone who can publish on the report topic)
/// chooses its version text. So a version label is cut at ``labelBytes`` bytes (versions that
/// then read the same are summed), at most `versionLimit` versions get a series of their own (the
/// newest, by ``TemplateVersionOrder``), and the devices on every other version are summed in one
/// series labelled `template_version="other"`. No per-device series unless asked (`perDevice`):
/// a fleet of 100,000 devices is 100,000 series.
public enum FleetMetrics {
    /// Versions with a series of their own unless the command line says otherwise.
    public static let defaultVersionLimit = 1_000
    /// A version label's length, at most.
    public static let labelBytes = 64
    /// The label value of the devices on versions past the limit.
    public static let otherVersions = "other"

    /// The states of `rcagent_fleet_devices_in_state`, each always present (0 when none).
    public static func states(_ summary: FleetSummary) -> [(String, Int)] {
        [
            ("online", summary.online.count), ("offline", summary.offline.count), ("stale", summary.stale.count),
            ("failing", summary.failing.count), ("deferred", summary.deferred.count),
            ("rolled_back", summary.rolledBack.count), ("update_required", summary.requiredUpdate.count),
            ("update_recommended", summary.recommendedUpdate.count),
        ]
    }

    /// The families for `summary`; `overCapacity`: reports left out for the exporter's `--max-devices`.
    public static func families(
        _ summary: FleetSummary, overCapacity: Int = 0, versionLimit: Int = defaultVersionLimit,
        perDevice: Bool = false
    ) -> [MetricFamily] {
        func gauge(_ name: String, _ help: String, _ samples: [MetricSample]) -> MetricFamily {
            MetricFamily(name: name, help: help, kind: .gauge, samples: samples)
        }
        func single(_ value: Int) -> [MetricSample] { [MetricSample(value: Double(value))] }
        let versions = bounded(summary.versions, limit: versionLimit)
        var families = [
            gauge("rcagent_fleet_devices_reporting", "Devices with a readable report.", single(summary.devices)),
            gauge(
                "rcagent_fleet_devices",
                "Devices per active template version (\"\": none; \"other\": versions past the exporter's limit).",
                versions.map { MetricSample(labels: [("template_version", $0.label)], value: Double($0.devices)) }),
            gauge(
                "rcagent_fleet_template_versions", "Distinct template versions the devices report.",
                single(summary.versions.count)),
            gauge(
                "rcagent_fleet_devices_in_state", "Devices per state (a device is in several).",
                states(summary).map { MetricSample(labels: [("state", $0.0)], value: Double($0.1)) }),
            gauge(
                "rcagent_fleet_devices_on_newest_version", "Devices on the newest numeric template version.",
                single(summary.onNewest)),
            gauge(
                "rcagent_fleet_newest_template_version",
                "The newest numeric template version any device reports (absent when none does, or over 15 digits).",
                // Any number of digits may come: more than a Double holds exactly make no sample.
                summary.newestVersion.flatMap(DeviceMetrics.versionNumber).map { [MetricSample(value: $0)] } ?? []),
            gauge(
                "rcagent_fleet_rollbacks",
                "Devices that rolled this template version back or reject it: the signal to halt a rollout.",
                bounded(summary.rollbacks, limit: versionLimit).map {
                    MetricSample(labels: [("template_version", $0.label)], value: Double($0.devices))
                }),
            gauge(
                "rcagent_fleet_reports_unreadable",
                "Messages on the report topic that are no device's readable report.", single(summary.unreadable.count)),
            gauge(
                "rcagent_fleet_reports_over_capacity", "Report topics left out: more than the exporter keeps.",
                single(overCapacity)),
        ]
        if perDevice { families += deviceFamilies(summary) }
        return families
    }

    /// One version's series: its label and its devices.
    struct VersionSeries: Equatable {
        let label: String
        let devices: Int
    }

    /// `counts` (newest first) as series: labels cut, equal labels summed, the devices on versions
    /// past the first `limit` numbered or named ones in `other`; no version is `""`, always kept.
    /// Each label comes once: a version that reads `""` or `other` is counted under that label.
    static func bounded(_ counts: [FleetSummary.VersionCount], limit: Int) -> [VersionSeries] {
        var order: [ByteKey] = []
        var devices: [ByteKey: Int] = [:]
        var other = 0
        var none = 0
        for count in counts {
            guard let version = count.version else {
                none += count.devices
                continue
            }
            let key = ByteKey(TextEscaping.truncated(version, maxBytes: labelBytes))
            // The labels this gives a meaning of its own are no version's: a device that names its
            // version "" or "other" is counted in that series, never in a second one of that label
            // (Prometheus drops the samples of a series it reads twice).
            if key.text.isEmpty {
                none += count.devices
                continue
            }
            if key.text.utf8.elementsEqual(otherVersions.utf8) {
                other += count.devices
                continue
            }
            if devices[key] == nil {
                guard order.count < limit else {
                    other += count.devices
                    continue
                }
                order.append(key)
            }
            devices[key, default: 0] += count.devices
        }
        var series = order.map { VersionSeries(label: $0.text, devices: devices[$0] ?? 0) }
        if other > 0 { series.append(VersionSeries(label: otherVersions, devices: other)) }
        if none > 0 { series.append(VersionSeries(label: "", devices: none)) }
        return series
    }

    /// `--per-device`: each device's version, online, stale and failing state.
    static func deviceFamilies(_ summary: FleetSummary) -> [MetricFamily] {
        let stale = Set(summary.stale.map { ByteKey($0) })
        let failing = Set(summary.failing.map { ByteKey($0) })
        var info: [MetricSample] = []
        var online: [MetricSample] = []
        var staleSamples: [MetricSample] = []
        var failingSamples: [MetricSample] = []
        for report in summary.reports {
            let id = ByteKey(report.deviceId)
            let device = [(name: "device_id", value: report.deviceId)]
            let version = report.templateVersion.map { TextEscaping.truncated($0, maxBytes: labelBytes) } ?? ""
            info.append(MetricSample(labels: device + [("template_version", version)], value: 1))
            online.append(MetricSample(labels: device, value: report.online ? 1 : 0))
            staleSamples.append(MetricSample(labels: device, value: stale.contains(id) ? 1 : 0))
            failingSamples.append(MetricSample(labels: device, value: failing.contains(id) ? 1 : 0))
        }
        return [
            MetricFamily(
                name: "rcagent_fleet_device_info", help: "One series per device: its active template version.",
                kind: .gauge, samples: info),
            MetricFamily(
                name: "rcagent_fleet_device_online", help: "1 when the device is online (0: its last will).",
                kind: .gauge, samples: online),
            MetricFamily(
                name: "rcagent_fleet_device_stale", help: "1 when the device's configuration is stale.", kind: .gauge,
                samples: staleSamples),
            MetricFamily(
                name: "rcagent_fleet_device_failing", help: "1 when the device's last fetch failed.", kind: .gauge,
                samples: failingSamples),
        ]
    }
}
