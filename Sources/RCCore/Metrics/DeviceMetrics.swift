/// What the device's metrics file (`[Report] MetricsFile=`) shows, as plain values, and the
/// metric families made from them (``families``): names, types and help in one place, after
/// Prometheus' naming conventions (an `rcagent_` prefix, base units, `_total` counters,
/// `_timestamp_seconds` Unix times). The names `rcagent_template_version`, `rcagent_stale`,
/// `rcagent_last_fetch_success_timestamp_seconds`, `rcagent_rollbacks_total` and
/// `rcagent_activation_deferred` are an interface dashboards and alerts rely on: never renamed.
public struct DeviceMetrics: Sendable, Equatable {
    /// The state the device report carries (template version, stale flag, last fetch, app update,
    /// signature, activation).
    public var report: DeviceReport
    public var lastFetchSuccess: Timestamp?
    /// A fetched snapshot waits to become active (manual activation, a window, a hold).
    public var activationPending: Bool
    /// Live Activities by state; states without one are shown as 0.
    public var activities: [LiveActivity.State: Int]
    /// The MQTT push channel's connection; `nil` without one.
    public var pushConnected: Bool?
    public var counters: Counters
    /// When the daemon started.
    public var startTime: Timestamp

    /// Counts since the state database was made (the store keeps them), not since the process
    /// started: a restart does not reset them.
    public struct Counters: Sendable, Equatable {
        /// Fetches by result: `success`, `no-change`, `failure`, `throttled`.
        public var fetches: [String: Int64]
        public var activations: Int64
        public var rollbacks: Int64
        public var deferrals: Int64
        /// Times the stale flag was set (a push, `rcagent mark-stale`) while it was clear.
        public var staleMarks: Int64

        public init(
            fetches: [String: Int64] = [:], activations: Int64 = 0, rollbacks: Int64 = 0, deferrals: Int64 = 0,
            staleMarks: Int64 = 0
        ) {
            self.fetches = fetches
            self.activations = activations
            self.rollbacks = rollbacks
            self.deferrals = deferrals
            self.staleMarks = staleMarks
        }
    }

    public init(
        report: DeviceReport, lastFetchSuccess: Timestamp?, activationPending: Bool,
        activities: [LiveActivity.State: Int], pushConnected: Bool?, counters: Counters, startTime: Timestamp
    ) {
        self.report = report
        self.lastFetchSuccess = lastFetchSuccess
        self.activationPending = activationPending
        self.activities = activities
        self.pushConnected = pushConnected
        self.counters = counters
        self.startTime = startTime
    }

    /// The fetch results, in the order they are shown (the store's spellings, as `status` and the
    /// device report have them).
    public static let fetchResults = ["success", "no-change", "failure", "throttled"]
    /// The app update kinds `rcagent_app_update_pending` shows.
    public static let updateKinds: [DeviceReport.Update] = [.recommended, .required]
    public static let activityStates: [LiveActivity.State] = [.active, .stale, .ended]

    /// The families, in a fixed order; one a value, each sample in base units.
    public var families: [MetricFamily] {
        var families: [MetricFamily] = []
        func add(_ name: String, _ kind: MetricFamily.Kind, _ help: String, _ samples: [MetricSample]) {
            families.append(MetricFamily(name: "rcagent_" + name, help: help, kind: kind, samples: samples))
        }
        func one(_ value: Double?) -> [MetricSample] { value.map { [MetricSample(value: $0)] } ?? [] }
        func flag(_ set: Bool) -> [MetricSample] { [MetricSample(value: set ? 1 : 0)] }
        func time(_ t: Timestamp?) -> [MetricSample] { one(t.map { Double($0.milliseconds) / 1_000 }) }
        let activation = report.activation

        add(
            "build_info", .gauge, "The agent's version (always 1).",
            [MetricSample(labels: [("version", report.agentVersion)], value: 1)])
        add("start_time_seconds", .gauge, "When the daemon started, in Unix seconds.", time(startTime))
        add(
            "template_version", .gauge,
            "The active template's version number (no sample when none is active or it is not a number).",
            one(report.templateVersion.flatMap(Self.versionNumber)))
        add(
            "template_info", .gauge,
            "The active template's version as text (always 1; none while no template is active).",
            report.templateVersion.map { [MetricSample(labels: [("template_version", $0)], value: 1)] } ?? [])
        add(
            "stale", .gauge, "Whether the config is stale: a push said so and no fetch has succeeded since (1/0).",
            flag(report.stale.set))
        add(
            "stale_since_timestamp_seconds", .gauge,
            "When the config became stale, in Unix seconds (only while it is).",
            report.stale.set ? time(report.stale.since) : [])
        add(
            "last_fetch_timestamp_seconds", .gauge, "When the last fetch was attempted, in Unix seconds.",
            time(report.lastFetch.at))
        add(
            "last_fetch_success_timestamp_seconds", .gauge,
            "When a fetch last succeeded (new values or no change), in Unix seconds.", time(lastFetchSuccess))
        add(
            "last_fetch_result", .gauge, "The last fetch's result: 1 for it, 0 for the others.",
            report.lastFetch.status.map { status in
                Self.fetchResults.map { MetricSample(labels: [("result", $0)], value: $0 == status ? 1 : 0) }
            } ?? [])
        add(
            "fetches_total", .counter, "Fetches by result, since the state database was made.",
            Self.fetchResults.map {
                MetricSample(labels: [("result", $0)], value: Double(counters.fetches[$0] ?? 0))
            })
        add(
            "activations_total", .counter, "Snapshots made active, since the state database was made.",
            one(Double(counters.activations)))
        add(
            "rollbacks_total", .counter,
            "Activations rolled back (a failed health check, rcagent rollback), since the state database was made.",
            one(Double(counters.rollbacks)))
        add(
            "activation_deferrals_total", .counter,
            "Activations deferred to a maintenance window or the end of a hold, since the state database was made.",
            one(Double(counters.deferrals)))
        add(
            "stale_marks_total", .counter, "Times the config was marked stale, since the state database was made.",
            one(Double(counters.staleMarks)))
        add(
            "activation_pending", .gauge, "Whether a fetched snapshot waits to become active (1/0).",
            flag(activationPending))
        add(
            "activation_deferred", .gauge, "Whether an activation waits for a maintenance window or a hold (1/0).",
            flag(activation?.deferred != nil))
        add(
            "activation_trial", .gauge, "Whether an activation is on trial under its health check (1/0).",
            flag(activation?.trial != nil))
        add(
            "last_rollback_timestamp_seconds", .gauge, "When the last rollback happened, in Unix seconds.",
            time(activation?.lastRollback?.at))
        add(
            "rejected_versions", .gauge, "Template versions this device refuses to activate again.",
            one(Double(activation?.rejected.count ?? 0)))
        add(
            "app_update_pending", .gauge, "Whether an update of the device's app is offered, by kind (1/0).",
            Self.updateKinds.map {
                MetricSample(labels: [("kind", $0.rawValue)], value: report.update == $0 ? 1 : 0)
            })
        add(
            "app_update_unknown", .gauge,
            "Whether the update check cannot tell (no installed version, a bad offer) (1/0).",
            flag(report.update == .unknown))
        add(
            "activities", .gauge, "Live Activities the device holds, by state.",
            Self.activityStates.map {
                MetricSample(labels: [("state", $0.rawValue)], value: Double(activities[$0] ?? 0))
            })
        add(
            "push_connected", .gauge, "Whether the MQTT push channel is connected (1/0; none without one).",
            pushConnected.map { [MetricSample(labels: [("channel", "mqtt")], value: $0 ? 1 : 0)] } ?? [])
        add(
            "signature_version", .gauge, "The last accepted signed document's version (TrustedKeys=).",
            one(report.signature?.version.map(Double.init)))
        add(
            "signature_expiry_timestamp_seconds", .gauge,
            "When the last accepted signed document expires, in Unix seconds (TrustedKeys=).",
            time(report.signature?.expires))
        return families
    }

    /// The file's text.
    public var text: String { PrometheusText.render(families) }

    /// A template version as a number: digits only (Firebase's versions), at most 15 of them so
    /// that a `Double` holds it exactly (the device's file and the fleet exporter alike).
    public static func versionNumber(_ version: String) -> Double? {
        guard !version.isEmpty, version.utf8.count <= 15,
            version.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { return nil }
        return Double(version)
    }
}
