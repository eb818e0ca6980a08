import RCCore
import RCStore
import RCSystem

/// Makes the device report (`[Report] MQTTStatusTopic=`) from what the agent knows: the store's
/// status (the agent's status board), the installed app, the activities, and the update keys'
/// active values for the verdict. It reads nothing itself but the values it is handed a way to.
enum DeviceReportAssembly {
    /// The report of the agent's state as the status board has it (online, at `now`): the store's
    /// `status` the board read, the installed app, and the few reads the report adds (the
    /// activities, the activation status, the update keys' active values).
    static func report(of board: StatusBoard, status: StoreStatus?, store: StateStore, at now: Timestamp)
        -> DeviceReport
    {
        report(
            deviceId: status?.deviceId ?? "", online: true, at: now, status: status,
            installed: try? board.installed?.get(), activities: (try? store.activities(now: now).count) ?? 0,
            config: board.config, activation: try? store.activationStatus(),
            value: { key in try store.value(forKey: key)?.text })
    }

    /// The report of the agent's state at `now`: the active template, the stale flag, the last
    /// fetch, the installed app and the update verdict over the active update keys, the activities.
    static func report(
        deviceId: String, online: Bool, at now: Timestamp, status: StoreStatus?, installed: InstalledVersion?,
        activities: Int, config: AgentConfig, activation: ActivationStatus? = nil, value: (String) throws -> String?
    ) -> DeviceReport {
        DeviceReport(
            deviceId: deviceId, online: online, at: now, agentVersion: BuildInfo.version,
            templateVersion: status?.active.templateVersion,
            stale: DeviceReport.Stale(set: status?.stale.isSet ?? false, since: status?.stale.since),
            lastFetch: DeviceReport.LastFetch(
                status: status?.lastStatus?.rawValue, at: status?.lastAttempt,
                error: status?.lastStatus == .failure ? status?.lastError : nil),
            appInstalled: installed?.version,
            update: updateVerdict(installed, config: config, now: now, value: value),
            activities: activities, signature: signature(config),
            activation: activation?.report)
    }

    /// The last accepted signed version (`TrustedKeys=`), from its small file in the state
    /// directory: `nil` without signatures; version and expiry `nil` before any is accepted or when
    /// the record cannot be read (the fetch error then says why).
    static func signature(_ config: AgentConfig) -> DeviceReport.Signature? {
        guard config.trustedKeys != nil else { return nil }
        let record = try? SignedVersionRecord.load(config.signedVersionPath)
        return DeviceReport.Signature(version: record?.version, expires: record?.expires)
    }

    /// What `rcagent check-update` would say, over the active values of the update keys; `unknown`
    /// when it cannot tell (no installed version, a value that does not parse, an unreadable store).
    static func updateVerdict(
        _ installed: InstalledVersion?, config: AgentConfig, now: Timestamp, value: (String) throws -> String?
    ) -> DeviceReport.Update {
        guard let installed else { return .unknown }
        do {
            let offers = try InstalledApp.offers(config: config, value: value)
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
}
