import Glibc
import RCCore
import RCStore
import RCSystem

/// Turns one control request into the call it names (on the agent, or a reload of the daemon) and
/// the response line it gets. Every answer is built from the typed responses the CLI decodes
/// (RCCore's ControlResponses.swift).
struct ControlRequests: Sendable {
    let agent: Agent
    /// Re-reads and applies the config: the daemon's, which owns the services a reload replaces.
    let reload: @Sendable () async -> Result<ReloadResponse, ControlError>

    /// Answers `request` on the calling thread, a connection's, which it blocks until the answer is
    /// there. A ping and a fetch need no task: the agent hands a fetch's outcome straight to this
    /// thread (``Agent/fetchBlocking(_:wait:)``). (Through a task, a fetch woke two more threads on
    /// its way in and out: about a tenth of a small fetch's 27 context switches, BENCHMARKS.md.)
    /// Everything else is answered by ``answerInTask(_:)``.
    func answer(_ request: ControlRequest) -> JSONValue {
        switch request {
        case .ping:
            return PingResponse(pid: Int64(getpid())).json
        case let .fetch(force, ignoreThrottle, wait):
            let outcome = agent.fetchBlocking(.manual(force: force, ignoreThrottle: ignoreThrottle), wait: wait)
            return outcome?.reply.json ?? FetchResponse.requested.json
        default:
            return blockingWait { [self] in await answerInTask(request) }
        }
    }

    /// The requests ``answer(_:)`` does not make on the connection's thread.
    private func answerInTask(_ request: ControlRequest) async -> JSONValue {
        do {
            switch request {
            case .ping, .fetch, .watch:
                return ControlError(.badRequest, "ping, fetch and watch are answered by the connection").json
            case .status:
                let board = await agent.statusBoard()
                return StatusResponse(
                    pid: Int64(getpid()), state: board.fetching ? "fetching" : "idle",
                    nextFetchAt: board.nextFetch?.iso8601, push: board.push?.description, config: board.config,
                    report: board.report?.description
                ).json
            case let .activate(now):
                return try await agent.activateOrDefer(now: now).json
            case let .rollback(version):
                switch try await agent.rollback(to: version) {
                case let .success(activation):
                    return RollbackResponse(
                        templateVersion: activation.templateVersion, changedKeys: activation.changedKeys
                    ).json
                case let .failure(refusal):
                    return ControlError(.rollbackRefused, refusal.description).json
                }
            case let .markStale(reason):
                let (newlySet, _) = try await agent.markStale(reason: reason ?? "rcagent mark-stale")
                return MarkStaleResponse(newlySet: newlySet).json
            case let .message(message, _, wait):
                return try await agent.handle(message, from: "socket", wait: wait, strict: true).json
            case .reload:
                return await reload().json
            case let .removeActivity(id):
                return RemoveActivityResponse(id: id, activity: try await agent.removeActivity(id: id).json).json
            }
        } catch {
            return Self.refusal(for: error).json
        }
    }

    /// The error code says what failed: a store error (a full disk, a read-only or damaged database,
    /// a lock held past the busy timeout) is `storage`, so a client can tell it from a daemon bug.
    static func refusal(for error: any Error) -> ControlError {
        switch error {
        case let refusal as ControlError: refusal
        case is SQLiteError, is StoreError: ControlError(.storage, "\(error)")
        default: ControlError(.internalError, "\(error)")
        }
    }
}
