import RCCore
import RCStore

/// What the agent shows its readers (`rcagent status` over the socket, the device report, the
/// `STATUS=` line, the push channels' checks, metrics), in one place: the store's status as of the
/// last write, and the agent's own fields. The writer (``StateWriter``) keeps it and pushes a
/// ``StatusSnapshot`` to every subscriber after each write, so no reader queries the store itself
/// (a ping used to read the store's status five times).
struct StatusBoard {
    /// The store's status, and the store ``StateStore/Version`` it was read at.
    private var stored: (status: StoreStatus, version: StateStore.Version)?

    /// A round is running (`status` says "fetching").
    var fetching = false
    /// What the push channel (MQTT) is doing (`nil` without one).
    var push: PushState?
    /// What the device report is doing (`nil` without one).
    var report: ReportState?
    /// The config the device report judges by (update keys, the app, signatures).
    var config: AgentConfig
    /// The installed app version the report carries, or why there is none: read at start, on a
    /// reload and after every fetch round (a dpkg upgrade shows up with the next round).
    var installed: Result<InstalledVersion, UpdateCheckError>?

    /// Who is pushed each snapshot, by subscription id.
    var readers: [Int: @Sendable (StatusSnapshot) -> Void] = [:]
    var lastReader = 0

    init(config: AgentConfig) { self.config = config }

    /// The store's status: the one kept, while the store is where it was when it was read (no
    /// write since, the agent's or another process's: `rcagent mark-stale` beside a busy daemon);
    /// else read again, once, and kept.
    mutating func storeStatus(of store: StateStore) throws -> StoreStatus {
        let version = try store.version()
        if let stored, stored.version == version { return stored.status }
        let status = try store.status()
        stored = (status, version)
        return status
    }

    /// After a write whose effect on the status the writer knows: the kept status takes `change`
    /// and the version after the write, without a read, if it was the store's right before the
    /// write (else the next look reads it again).
    mutating func apply(
        _ write: (before: StateStore.Version, after: StateStore.Version)?, _ change: (inout StoreStatus) -> Void
    ) {
        guard let write, var kept = stored, kept.version == write.before else { return }
        change(&kept.status)
        stored = (kept.status, write.after)
    }
}

/// One look at the agent, pushed to the status board's subscribers (``StateWriter/subscribe(_:)``)
/// at once and after every change: what `status`, the device report and metrics show.
struct StatusSnapshot: Sendable {
    /// The store's status (`nil`: it could not be read).
    var store: StoreStatus?
    var fetching: Bool
    var push: PushState?
    var report: ReportState?
    /// The device report of this state, online, made at the change (``DeviceReportAssembly``).
    var device: DeviceReport
}

/// The board's fields as the socket's `status` answer carries them: one look at the agent.
struct AgentStatus: Sendable {
    var fetching: Bool
    var nextFetch: Timestamp?
    var push: PushState?
    var config: String
    var report: ReportState?
}
