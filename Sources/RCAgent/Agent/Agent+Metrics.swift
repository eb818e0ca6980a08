import RCCore
import RCStore

/// The agent's side of the metrics file (`[Report] MetricsFile=`, ``MetricsWriter``): the device
/// report's state, plus what only the metrics show (counters the store keeps, activities by
/// state, the push connection, the daemon's start).
extension Agent {
    func deviceMetrics(_ snapshot: StatusSnapshot) -> DeviceMetrics {
        let now = Timestamp.now()
        let status = snapshot.store
        let report = snapshot.device
        var activities: [LiveActivity.State: Int] = [:]
        for activity in (try? writer.store.activities(now: now)) ?? [] { activities[activity.state, default: 0] += 1 }
        let stored = (try? writer.store.counters()) ?? StateStore.Counters()
        let counters = DeviceMetrics.Counters(
            fetches: Dictionary(uniqueKeysWithValues: stored.fetches.map { ($0.key.rawValue, $0.value) }),
            activations: stored.events(.activated), rollbacks: stored.events(.rolledBack),
            deferrals: stored.events(.activationDeferred), staleMarks: stored.events(.staleSet))
        let pushConnected: Bool? =
            switch snapshot.push {
            case nil: nil
            case .connected?, .subscriptionRefused?: true
            case .connecting?, .reconnecting?, .notRunning?: false
            }
        return DeviceMetrics(
            report: report, lastFetchSuccess: status?.lastSuccess, activationPending: status?.pending ?? false,
            activities: activities, pushConnected: pushConnected, counters: counters, startTime: startTime)
    }
}
