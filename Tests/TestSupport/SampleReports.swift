import RCCore

extension DeviceReport {
    /// A healthy device's report on `version` at `at` (online, not stale, last fetch a success, app
    /// 1.0.0 with no update, no activities); `change` makes it otherwise. For the fleet suites.
    public static func sample(
        _ id: String, _ version: String?, at: Timestamp, _ change: (inout DeviceReport) -> Void = { _ in }
    ) -> DeviceReport {
        var report = DeviceReport(
            deviceId: id, online: true, at: at, agentVersion: "0.9.0", templateVersion: version,
            stale: .init(set: false, since: nil), lastFetch: .init(status: "success", at: at, error: nil),
            appInstalled: "1.0.0", update: .none, activities: 0)
        change(&report)
        return report
    }
}
