import RCCore
import RCSystem
import Synchronization

/// What `/metrics` serves: the fleet's families, rendered once per change of the picture (at most
/// once a second, on the collector's thread), and the exporter's own, rendered per scrape (cheap:
/// a few lines). Scrapes run on the HTTP server's thread, so the page is kept under a lock, and a
/// scrape sends it in place (``PageBytes``): a connection costs the exporter's few lines, not a copy
/// of the page, even with `--per-device`.
final class ExporterPage: Sendable {
    private struct State {
        var fleet = PageBytes("")
        var ready = false
        var connected = false
        var changedAt: Timestamp?
    }

    private let state = Mutex(State())
    private let scrapes = Atomic<Int>(0)
    private let versionLimit: Int
    private let perDevice: Bool
    private let received: @Sendable () -> Int

    /// `received`: the collector's count of messages on the report topic.
    init(versionLimit: Int, perDevice: Bool, received: @escaping @Sendable () -> Int) {
        self.versionLimit = versionLimit
        self.perDevice = perDevice
        self.received = received
    }

    /// The picture changed (or the retained set is in): renders the fleet's families.
    func update(_ inbox: FleetInbox, at now: Timestamp = .now()) {
        let families = FleetMetrics.families(
            inbox.summary, overCapacity: inbox.overflow, versionLimit: versionLimit, perDevice: perDevice)
        let text = PageBytes(PrometheusText.render(families))
        state.withLock {
            $0.fleet = text
            $0.ready = true
            $0.changedAt = now
        }
    }

    /// The connection to the broker is up with its retained set in (`true`), or lost (`false`).
    func connection(_ up: Bool) { state.withLock { $0.connected = up } }

    /// The whole page, counting this scrape: the fleet's part, then the exporter's own.
    func render() -> [PageBytes] {
        let scrape = scrapes.add(1, ordering: .relaxed).newValue
        let (fleet, ready, connected, changedAt) = state.withLock {
            ($0.fleet, $0.ready, $0.connected, $0.changedAt)
        }
        let own = [
            MetricFamily(
                name: "rcagent_fleet_exporter_ready",
                help: "1 once the broker's retained reports are in (the other rcagent_fleet_* series come then).",
                kind: .gauge, samples: [MetricSample(value: ready ? 1 : 0)]),
            MetricFamily(
                name: "rcagent_fleet_exporter_broker_connected",
                help: "1 while connected to the broker with its retained reports in (0: the series are the last seen).",
                kind: .gauge, samples: [MetricSample(value: connected ? 1 : 0)]),
            MetricFamily(
                name: "rcagent_fleet_exporter_last_change_timestamp_seconds",
                help: "When the fleet's picture last changed (Unix time).", kind: .gauge,
                samples: changedAt.map { [MetricSample(value: Double($0.milliseconds) / 1000)] } ?? []),
            MetricFamily(
                name: "rcagent_fleet_reports_received_total",
                help: "Messages received on the report topic (reports, cleared and unreadable ones).", kind: .counter,
                samples: [MetricSample(value: Double(received()))]),
            MetricFamily(
                name: "rcagent_fleet_exporter_scrapes_total", help: "Requests for /metrics, this one included.",
                kind: .counter, samples: [MetricSample(value: Double(scrape))]),
        ]
        return [fleet, PageBytes(PrometheusText.render(own))]
    }
}
