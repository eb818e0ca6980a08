/// The control socket protocol (SPEC §6): one JSON object per line each way. A request names its
/// `op`; a response is `{"ok":true,...}` or `{"ok":false,"error":{"code":"...","message":"..."}}`.
/// Shared by the daemon and the CLI so both sides agree on every name.
public enum ControlRequest: Sendable, Equatable {
    case ping
    case status
    case fetch(force: Bool, ignoreThrottle: Bool, wait: Bool)
    case activate
    case markStale(reason: String?)
    /// The parsed message and the JSON it came from (forwarded as it is).
    case message(PushMessage, raw: JSONValue, wait: Bool)
    case watch

    /// Requests that change state need a privileged peer (root, the daemon's user, or SocketGroup).
    public var changesState: Bool {
        switch self {
        case .ping, .status, .watch: false
        case .fetch, .activate, .markStale, .message: true
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
        case "activate": return .activate
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
        case .activate: .object([("op", .string("activate"))])
        case let .markStale(reason):
            .object([("op", .string("mark-stale")), ("reason", reason.map(JSONValue.string) ?? .null)])
        case let .message(_, raw, wait): .object([("op", .string("message")), ("message", raw), ("wait", .bool(wait))])
        case .watch: .object([("op", .string("watch"))])
        }
    }
}

/// A request the daemon refused, with a machine-readable code.
public struct ControlError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Code: String, Sendable {
        case badJSON = "bad-json"
        case badRequest = "bad-request"
        case badMessage = "bad-message"
        case unknownOp = "unknown-op"
        case lineTooLong = "line-too-long"
        case permissionDenied = "permission-denied"
        case busy
        case throttled
        case fetchFailed = "fetch-failed"
        case timeout
        case internalError = "internal"
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    public var response: JSONValue {
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
