import RCCore
import RCFirebase
import RCHTTP
import RCSystem

/// The `firebase` source: the daemon's adapter around RCFirebase's client fetch call
/// (``RemoteConfigFetcher``: Firebase Installations, then `firebase:fetch`), set up from the config
/// and answering in the daemon's terms (``SourceResult``, ``SourceError``). It also holds the
/// realtime stream of the same project and installation, for the ``RealtimeListener``.
public final class FirebaseSource: ConfigSource {
    let fetcher: RemoteConfigFetcher
    let realtime: RealtimeStream

    public init(config: AgentConfig, deviceId: String, environment: [String: String]) {
        let endpoints = FirebaseEndpoints(
            project: config.projectId ?? "", apiKey: config.apiKey ?? "", endpoint: config.endpoint)
        let appId = config.appId ?? ""
        // Timeouts, size limit and TLS files from the config (CAFile= serves proxies and private endpoints).
        let base = HTTPRequest(url: "", config: config)
        let installations = InstallationClient(
            endpoints: endpoints, appId: appId, installationId: deviceId,
            credentialsPath: config.stateDirectory + "/installation.json", base: base)
        fetcher = RemoteConfigFetcher(
            endpoints: endpoints, installations: installations, appId: appId,
            appVersion: Self.appVersion(config: config, environment: environment),
            packageName: config.appPackage, signals: config.signals,
            facts: DeviceFacts.current(environment: environment), base: base)
        realtime = RealtimeStream(endpoints: endpoints, appId: appId, installations: installations, base: base)
    }

    /// The installed app version the fetch reports, as the device report and `check-update` read it
    /// (``InstalledApp``: `[App] Version=`, else dpkg's version of `[App] Package=`); "0" when there
    /// is none.
    static func appVersion(config: AgentConfig, environment: [String: String]) -> String {
        let statusFile = InstalledApp.dpkgStatusFile(environment: environment)
        return (try? InstalledApp.version(config: config, dpkgStatusFile: statusFile))?.version ?? "0"
    }

    public var name: String { "firebase project \(fetcher.endpoints.project)" }

    /// The `X-Firebase-RC-Fetch-Type` header says why: `REALTIME/<attempt>` after a realtime
    /// invalidation, `BASE/1` otherwise.
    public func fetch(etag: String?, trigger: FetchTrigger) async throws(SourceError) -> SourceResult {
        if case let .realtime(attempt, _) = trigger {
            return try await fetch(etag: etag, type: "REALTIME/\(attempt)")
        }
        return try await fetch(etag: etag, type: "BASE/1")
    }

    /// `type` is the `X-Firebase-RC-Fetch-Type` header: `BASE/1`, or `REALTIME/<attempt>` after a
    /// realtime invalidation.
    func fetch(etag: String?, type: String) async throws(SourceError) -> SourceResult {
        switch try await fetcher.fetch(etag: etag, type: type) {
        case let .document(document, etag): return .document(document, etag: etag)
        case .notModified: return .notModified
        }
    }
}
