import RCCore
import RCStore

/// What the agent shows its readers (`rcagent status` over the socket, the device report, the
/// `STATUS=` line, the push channels' checks), in one place: the store's status as of the last
/// write, and the agent's own fields. The agent, the one writer, keeps it; readers take it
/// instead of querying the store each (a ping used to read the store's status five times).
struct StatusBoard: Sendable {
    /// The store's status, and the store ``StateStore/Version`` it was read at.
    private var stored: (status: StoreStatus, version: StateStore.Version)?

    /// A round is running (`status` says "fetching").
    var fetching = false
    /// What the push channel (MQTT) is doing (`nil` without one).
    var push: PushState?
    /// What the device report is doing (`nil` without one).
    var report: ReportState?

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
}

/// The board's fields as the socket's `status` answer carries them: one look at the agent.
struct AgentStatus: Sendable {
    var fetching: Bool
    var nextFetch: Timestamp?
    var push: PushState?
    var config: String
    var report: ReportState?
}
