import RCCore

/// The persistent stale flag.
public struct StaleFlag: Sendable, Equatable {
    public var isSet: Bool
    public var reason: String?
    public var since: Timestamp?

    public static let clear = StaleFlag(isSet: false, reason: nil, since: nil)
}

public enum FetchStatus: String, Sendable {
    case success
    case noChange = "no-change"
    case failure
    case throttled
}

public struct SnapshotInfo: Sendable, Equatable {
    public var templateVersion: String?
    public var etag: String?
    /// When the values were fetched (fetched snapshot) or activated (active snapshot).
    public var at: Timestamp?
    public var keys: Int
}

/// Everything `rcagent status` shows that lives in the database.
public struct StoreStatus: Sendable {
    public var deviceId: String?
    public var stale: StaleFlag
    public var active: SnapshotInfo
    public var fetched: SnapshotInfo
    public var pending: Bool
    public var lastAttempt: Timestamp?
    public var lastSuccess: Timestamp?
    public var lastStatus: FetchStatus?
    public var lastError: String?
    public var throttledUntil: Timestamp?
    public var backoffStep: Int
    public var nextFetchAt: Timestamp?
}

/// What one activation changed: keys added, removed or given a new value (sorted).
public struct Activation: Sendable, Equatable {
    /// Every key that was added, removed or given a new value, sorted.
    public var changedKeys: [String]
    public var templateVersion: String?
    /// The same keys with their values before and after, when the caller asked for them (hooks
    /// want them; reading 3,000 values twice for nobody is a third of a big activation's cost).
    public var changes: [KeyChange]?
}

/// One key an activation changed, as `get` sees it before and after: a remote value, else the
/// key's default, else nothing.
public struct KeyChange: Sendable, Equatable {
    public var key: String
    public var old: String?
    public var new: String?
    /// Where the new value comes from (`nil`: the key is gone).
    public var source: ValueSource?
}

/// One entry of the bounded event log; `detail` is a JSON object.
public struct StoredEvent: Sendable, Equatable {
    public var id: Int64
    public var at: Timestamp
    /// As logged: an ``AgentEventKind``'s raw value, or a kind of another version's (see ``known``).
    public var kind: String
    public var detail: JSONValue

    /// The kind, when this version knows it.
    public var known: AgentEventKind? { AgentEventKind(rawValue: kind) }
}

/// The outcome of a fetch as the store records it.
public enum FetchRecord: Sendable {
    case update(values: RemoteValues, templateVersion: String?, etag: String?)
    case noChange
    case failure(error: String, backoffStep: Int, nextAttempt: Timestamp?, throttledUntil: Timestamp?)
    case throttled(until: Timestamp)
}

public enum StoreError: Error, CustomStringConvertible, Sendable {
    case sqlite(SQLiteError)
    case schemaTooNew(found: Int, supported: Int, path: String)
    /// `PRAGMA integrity_check` found damage.
    case integrityCheckFailed(String)

    public var description: String {
        switch self {
        case let .sqlite(error): error.description
        case let .schemaTooNew(found, supported, path):
            "\(path): database schema version \(found) is newer than this rcagent supports (\(supported))"
        case let .integrityCheckFailed(problems): "integrity check failed: \(problems)"
        }
    }

    public var isCorruption: Bool {
        switch self {
        case let .sqlite(error): error.isCorruption
        case .integrityCheckFailed: true
        case .schemaTooNew: false
        }
    }
}
