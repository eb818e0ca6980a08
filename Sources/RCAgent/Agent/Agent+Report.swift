import RCCore
import RCService
import RCStore
import RCSystem

/// The installed app version and where it came from (`[App] Version=`, or dpkg).
struct InstalledVersion: Sendable, Equatable {
    let version: String
    let origin: String
}

/// The agent's side of the device report (`[Report] MQTTStatusTopic=`): what the report is made
/// from (``DeviceReportAssembly`` makes it), and the observers that hear when that state may have changed.
extension Agent {
    /// The report of the agent's state now (``DeviceReportAssembly``), from the status board.
    func deviceReport(deviceId: String, online: Bool) -> DeviceReport {
        let now = Timestamp.now()
        if installedApp == nil { refreshInstalledApp() }
        var report = DeviceReportAssembly.report(
            deviceId: deviceId, online: online, at: now, status: try? writer.status(),
            installed: try? installedApp?.get(), activities: (try? writer.store.activities(now: now).count) ?? 0,
            config: config, value: { [store = writer.store] key in try store.value(forKey: key)?.text })
        report.activation.deferred = deferral.current?.templateVersion
        return report
    }

    /// Reads the installed version again (`[App] Package=`: dpkg's status file).
    func refreshInstalledApp() {
        do {
            let found = try InstalledApp.version(
                config: config, dpkgStatusFile: InstalledApp.dpkgStatusFile(environment: Environment.current()))
            installedApp = .success(InstalledVersion(version: found.version, origin: found.origin))
        } catch {
            installedApp = .failure(error)
        }
    }

    /// Adds an observer of state changes (see ``EventBroadcaster/stateMayHaveChanged()``).
    func observeChanges(_ observer: @escaping @Sendable () -> Void) -> Int { writer.events.observe(observer) }

    func stopObservingChanges(_ id: Int) { writer.events.stopObserving(id) }

    func setReportState(_ state: ReportState?) { writer.board.report = state }
}
