/// The control socket protocol: one JSON object per line each way. A request names its
/// `op`; a response is `{"ok":true,...}` or `{"ok":false,"error":{"code":"...","message":"..."}}`.
/// Shared by the daemon and the CLI so both sides agree on every name.
public enum ControlRequest: Sendable, Equatable {
    case ping
    case status
    case fetch(force: Bool, ignoreThrottle: Bool, wait: Bool)
    /// Activate the fetched snapshot; `now` overrides maintenance windows and holds.
    case activate(now: Bool)
    case markStale(reason: String?)
    /// The parsed message and the JSON it came from (forwarded as it is).
    case message(PushMessage, raw: JSONValue, wait: Bool)
    case watch
    /// Re-read agent.conf, its drop-ins and the defaults file, and apply them.
    case reload
    /// Remove the Live Activity `id` at once (`rcagent activity remove`).
    case removeActivity(id: String)
    /// Re-activate a kept snapshot (`version`, or the newest older one not rejected), rejecting the
    /// versions after it (`rcagent rollback`).
    case rollback(version: String?)

    /// Requests that change state need a privileged peer (root, the daemon's user, or SocketGroup).
    public var changesState: Bool {
        switch self {
        case .ping, .status, .watch: false
        case .fetch, .activate, .markStale, .message, .reload, .removeActivity, .rollback: true
        }
    }

    public static let maximumLineLength = 64 * 1024

    public static func parse(_ line: [UInt8]) throws(ControlError) -> ControlRequest {
        let json: JSONValue
        do { json = try JSONValue.parse(line) } catch { throw ControlError(.badJSON, error.description) }
        guard json.objectMembers != nil else { throw ControlError(.badRequest, "a request must be a JSON object") }
        guard let op = json["op"]?.stringValue else {
            throw ControlError(.badRequest, "a request needs a string \"op\"")
        }
        func flag(_ name: String) throws(ControlError) -> Bool {
            switch json[name] {
            case nil: return false
            case let .bool(b)?: return b
            case let other?: throw ControlError(.badRequest, "\"\(name)\" must be true or false, got \(other.typeName)")
            }
        }
        switch op {
        case "ping": return .ping
        case "status": return .status
        case "fetch":
            return .fetch(force: try flag("force"), ignoreThrottle: try flag("ignoreThrottle"), wait: try flag("wait"))
        case "activate": return .activate(now: try flag("now"))
        case "mark-stale":
            switch json["reason"] {
            case nil, .null?: return .markStale(reason: nil)
            case let .string(s)?: return .markStale(reason: s)
            case let other?: throw ControlError(.badRequest, "\"reason\" must be a string, got \(other.typeName)")
            }
        case "message":
            guard let message = json["message"] else {
                throw ControlError(.badRequest, "\"message\" op needs a \"message\" object")
            }
            let wait = try flag("wait")
            do { return .message(try PushMessage.parse(message), raw: message, wait: wait) } catch {
                throw ControlError(.badMessage, error.reason)
            }
        case "watch": return .watch
        case "reload": return .reload
        case "activity-remove":
            guard let id = json["id"]?.stringValue else {
                throw ControlError(.badRequest, "\"activity-remove\" op needs a string \"id\"")
            }
            return .removeActivity(id: id)
        case "rollback":
            switch json["version"] {
            case nil, .null?: return .rollback(version: nil)
            case let .string(s)?: return .rollback(version: s)
            case let other?: throw ControlError(.badRequest, "\"version\" must be a string, got \(other.typeName)")
            }
        default: throw ControlError(.unknownOp, "unknown op \"\(op)\"")
        }
    }

    public var json: JSONValue {
        switch self {
        case .ping: .object([("op", .string("ping"))])
        case .status: .object([("op", .string("status"))])
        case let .fetch(force, ignoreThrottle, wait):
            .object([
                ("op", .string("fetch")), ("force", .bool(force)), ("ignoreThrottle", .bool(ignoreThrottle)),
                ("wait", .bool(wait)),
            ])
        case let .activate(now): .object([("op", .string("activate")), ("now", .bool(now))])
        case let .markStale(reason):
            .object([("op", .string("mark-stale")), ("reason", reason.map(JSONValue.string) ?? .null)])
        case let .message(_, raw, wait): .object([("op", .string("message")), ("message", raw), ("wait", .bool(wait))])
        case .watch: .object([("op", .string("watch"))])
        case .reload: .object([("op", .string("reload"))])
        case let .removeActivity(id): .object([("op", .string("activity-remove")), ("id", .string(id))])
        case let .rollback(version):
            .object([("op", .string("rollback")), ("version", version.map(JSONValue.string) ?? .null)])
        }
    }
}

/// A request the daemon refused or could not carry out, with a machine-readable code that says what
/// failed (docs/protocol.md, ERROR CODES).
public struct ControlError: Error, CustomStringConvertible, Sendable, Equatable {
    /// An open set: a code this side does not know (from a newer daemon) is kept as it is.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        // The request itself.
        public static let badJSON = Code(rawValue: "bad-json")
        public static let badRequest = Code(rawValue: "bad-request")
        public static let badMessage = Code(rawValue: "bad-message")
        /// A valid Live Activity message the activity's rules cannot apply (an update before its start).
        public static let activityRefused = Code(rawValue: "activity-refused")
        /// `activity-remove` named an activity the device does not keep.
        public static let noSuchActivity = Code(rawValue: "no-such-activity")
        public static let unknownOp = Code(rawValue: "unknown-op")
        public static let lineTooLong = Code(rawValue: "line-too-long")
        public static let timeout = Code(rawValue: "timeout")
        // Who asked, and whether there was room.
        public static let permissionDenied = Code(rawValue: "permission-denied")
        public static let busy = Code(rawValue: "busy")
        // What carrying it out came to.
        public static let throttled = Code(rawValue: "throttled")
        public static let fetchFailed = Code(rawValue: "fetch-failed")
        /// The state database failed (a full disk, a read-only or damaged file, a lock held too long).
        public static let storage = Code(rawValue: "storage")
        /// The daemon is stopping and will not carry the request out.
        public static let shuttingDown = Code(rawValue: "shutting-down")
        /// A reload found a config that does not load (the message has the file:line); the running
        /// config stays.
        public static let invalidConfig = Code(rawValue: "invalid-config")
        /// `rollback` found nothing to go back to, or was asked for a version it cannot take.
        public static let rollbackRefused = Code(rawValue: "rollback-refused")
        /// Anything else: a bug.
        public static let internalError = Code(rawValue: "internal")
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    /// `{"ok":false,"error":{"code":"...","message":"..."}}`.
    public var json: JSONValue {
        .object([
            ("ok", .bool(false)),
            ("error", .object([("code", .string(code.rawValue)), ("message", .string(message))])),
        ])
    }
}

extension JSONValue {
    /// `{"ok":true, fields...}`.
    public static func ok(_ fields: [(key: String, value: JSONValue)] = []) -> JSONValue {
        .object([("ok", .bool(true))] + fields)
    }
}
