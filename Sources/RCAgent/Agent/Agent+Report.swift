import RCCore
import RCService
import RCStore

/// The installed app version and where it came from (`[App] Version=`, or dpkg).
struct InstalledVersion: Sendable, Equatable {
    let version: String
    let origin: String
}

/// The agent's side of the device report (`[Report] MQTTStatusTopic=`): the report made from its
/// state, and the observers that hear when that state may have changed.
extension Agent {
    /// The report of the agent's state now: the active template, the stale flag, the last fetch,
    /// the installed app and the update verdict over the active update keys, the activities.
    func deviceReport(deviceId: String, online: Bool) -> DeviceReport {
        let now = Timestamp.now()
        let status = try? board.storeStatus(of: store)
        if installedApp == nil { refreshInstalledApp() }
        let installed = try? installedApp?.get()
        return DeviceReport(
            deviceId: deviceId, online: online, at: now, agentVersion: BuildInfo.version,
            templateVersion: status?.active.templateVersion,
            stale: DeviceReport.Stale(set: status?.stale.isSet ?? false, since: status?.stale.since),
            lastFetch: DeviceReport.LastFetch(
                status: status?.lastStatus?.rawValue, at: status?.lastAttempt,
                error: status?.lastStatus == .failure ? status?.lastError : nil),
            appInstalled: installed?.version, update: updateVerdict(installed, now: now),
            activities: (try? store.activities(now: now).count) ?? 0)
    }

    /// What `rcagent check-update` would say, over the active values of the update keys; `unknown`
    /// when it cannot tell (no installed version, a value that does not parse, an unreadable store).
    private func updateVerdict(_ installed: InstalledVersion?, now: Timestamp) -> DeviceReport.Update {
        guard let installed else { return .unknown }
        do {
            let offers = try InstalledApp.offers(config: config) { key in try store.value(forKey: key)?.text }
            let verdict = try UpdateChecker(scheme: config.versionScheme)
                .check(installed: installed.version, installedOrigin: installed.origin, offers: offers, now: now)
            switch verdict.result {
            case .none: return .none
            case .recommended: return .recommended
            case .required: return .required
            }
        } catch {
            return .unknown
        }
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
    func observeChanges(_ observer: @escaping @Sendable () -> Void) -> Int { events.observe(observer) }

    func stopObservingChanges(_ id: Int) { events.stopObserving(id) }

    func setReportState(_ state: String?) { board.report = state }
}
