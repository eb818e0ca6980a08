import RCCore
import RCService
import RCStore
import RCSystem

/// The installed app version and where it came from (`[App] Version=`, or dpkg).
struct InstalledVersion: Sendable, Equatable {
    let version: String
    let origin: String
}

/// The agent's side of its readers (the device report, metrics): they subscribe to the status
/// board and are pushed a ``StatusSnapshot`` (with the device report of the state, made by
/// ``DeviceReportAssembly``) at once and after every change.
extension Agent {
    /// Subscribes `reader` to the status (``StateWriter/subscribe(_:)``): called at once, then after
    /// every change, on the agent's executor; the id ends it.
    func subscribeStatus(_ reader: @escaping @Sendable (StatusSnapshot) -> Void) -> Int {
        if writer.board.installed == nil { refreshInstalledApp() }
        return writer.subscribe(reader)
    }

    func unsubscribeStatus(_ id: Int) { writer.unsubscribe(id) }

    /// Reads the installed version again (`[App] Package=`: dpkg's status file).
    func refreshInstalledApp() {
        do {
            let found = try InstalledApp.version(
                config: config, dpkgStatusFile: InstalledApp.dpkgStatusFile(environment: Environment.current()))
            writer.board.installed = .success(InstalledVersion(version: found.version, origin: found.origin))
        } catch {
            writer.board.installed = .failure(error)
        }
    }

    func setReportState(_ state: ReportState?) {
        writer.board.report = state
        writer.publishStatus()
    }
}
