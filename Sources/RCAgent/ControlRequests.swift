import Glibc
import RCCore
import RCStore

/// Turns one control request into the agent call it names and the response line it gets.
enum ControlRequests {
    static func answer(_ request: ControlRequest, agent: Agent) async -> JSONValue {
        do {
            switch request {
            case .ping:
                return .ok([("pid", .integer(Int64(getpid())))])
            case .status:
                return .ok([
                    ("pid", .integer(Int64(getpid()))),
                    ("state", .string(await agent.fetching ? "fetching" : "idle")),
                    ("nextFetchAt", (await agent.nextFetch).map { .string($0.iso8601) } ?? .null),
                    ("push", (await agent.pushState).map(JSONValue.string) ?? .null),
                ])
            case let .fetch(force, ignoreThrottle, wait):
                let outcome = await agent.fetch(.manual(force: force, ignoreThrottle: ignoreThrottle), wait: wait)
                return outcome?.response ?? .ok([("outcome", .string("requested"))])
            case .activate:
                guard let activation = try await agent.activate() else {
                    return .ok([("activated", .bool(false)), ("changedKeys", .array([]))])
                }
                return .ok([
                    ("activated", .bool(true)),
                    ("templateVersion", activation.templateVersion.map(JSONValue.string) ?? .null),
                    ("changedKeys", .array(activation.changedKeys.map(JSONValue.string))),
                ])
            case let .markStale(reason):
                let (newlySet, _) = try await agent.markStale(reason: reason ?? "rcagent mark-stale")
                return .ok([("stale", .bool(true)), ("newlySet", .bool(newlySet))])
            case let .message(message, _, wait):
                return try await agent.handle(message, from: "socket", wait: wait)
            case .watch:
                return ControlError(.badRequest, "watch is handled by the connection").response
            }
        } catch {
            return ControlError(.internalError, "\(error)").response
        }
    }
}
