import RCCore
import RCFirebase
import RCService
import RCSystem

/// The daemon's side of Firebase's realtime invalidation stream (the protocol is
/// RCFirebase's ``RealtimeStream``): a `latestTemplateVersionNumber` above the current version
/// triggers a fetch that must reach it; `featureDisabled` stops reconnecting. Failed connections back
/// off exponentially with jitter, counted across restarts. A (re)connect fetches by itself only
/// when the cache is stale or was never fetched: a template published while it was down is
/// announced by the stream's first message (the server compares it with `lastKnownVersionNumber`),
/// so a flapping stream costs no fetches.
final class RealtimeListener: Sendable {
    private let stream: RealtimeStream
    private let agent: any RealtimeTarget
    private let log: Logger
    /// Unreadable or oversized messages: at most one line a minute, with the count of the others.
    private let refusals: RefusalLog
    private let policy: FetchPolicy

    init(stream: RealtimeStream, agent: any RealtimeTarget, log: Logger) {
        self.stream = stream
        self.agent = agent
        self.log = log
        refusals = RefusalLog(log)
        policy = FetchPolicy(minimumInterval: .zero)
    }

    /// What a connection asks of the agent, in the order the stream said it.
    private enum Work: Sendable {
        /// The stream (re)opened: fetch if the cache is stale or was never fetched.
        case opened
        /// The stream announced a template version: fetch until it is reached, if it is newer.
        case announced(Int64)
    }

    /// Connects and reconnects until cancelled, or until the server says not to. The connection's
    /// events reach the agent through one ordered stream, handled by one child task: a fetch an
    /// announcement starts never overtakes the one the stream's opening started.
    func run() async {
        let (work, input) = AsyncStream<Work>.makeStream()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [agent] in
                for await item in work {
                    switch item {
                    case .opened:
                        guard await agent.wantsFetchOnStreamOpen() else { continue }
                        await agent.refetch(toReach: nil)
                    case let .announced(version):
                        guard await agent.isNewer(version) else { continue }
                        await agent.refetch(toReach: version)
                    }
                }
            }
            await connectLoop(input)
            input.finish()
        }
    }

    private func connectLoop(_ work: AsyncStream<Work>.Continuation) async {
        var failures = Int(await agent.note(.realtimeFailures) ?? "") ?? 0
        // Streams the server ends soon after opening: each reconnects after twice the wait of the
        // last (1 s, 2 s, 4 s ... 5 min), so a server that keeps closing at once is not hammered.
        var shortStreams = 0
        while !Task.isCancelled {
            if let wait = await retryDelay(), wait > .zero {
                try? await Task.sleep(for: wait)
                if Task.isCancelled { return }
            }
            let lastKnown = (try? await agent.currentTemplateVersion()) ?? nil
            let etag = (try? await agent.status())?.fetched.etag
            let opened = ContinuousClock.now
            let result = await stream.connect(lastKnownVersion: lastKnown, etag: etag) { [log, refusals] event in
                switch event {
                case .opened:
                    log.info("Realtime stream open")
                    work.yield(.opened)
                case let .templatePublished(version):
                    work.yield(.announced(version))
                case let .unreadable(text):
                    refusals.refused("unreadable", "Ignoring an unreadable realtime message: \(text)")
                }
            }
            switch result {
            case .disabled:
                log.notice("Realtime updates are disabled for this project (featureDisabled); not reconnecting")
                return
            case let .stopped(reason):
                log.error("Failed to keep the realtime stream: \(reason); not reconnecting")
                return
            case let .ended(retryInterval):
                // It was open: not a failure. Reconnect after the server's interval, or sooner-is-better
                // with a growing pause when streams keep ending within half a minute.
                failures = 0
                shortStreams = ContinuousClock.now - opened < .seconds(30) ? shortStreams + 1 : 0
                let pause = Duration.seconds(min(1 << min(max(shortStreams - 1, 0), 9), 300))
                await schedule(after: max(retryInterval ?? .zero, pause), failures: 0)
            case let .failed(reason, retryInterval):
                failures += 1
                let wait = max(policy.backoff(step: failures), retryInterval ?? .zero)
                log.warning(
                    "Failed to open the realtime stream: \(reason); retrying in \(DurationText.format(.seconds(wait.milliseconds / 1_000)))"
                )
                await schedule(after: wait, failures: failures)
            }
        }
    }

    private func retryDelay() async -> Duration? {
        guard let text = await agent.note(.realtimeRetryAt), let ms = Int64(text) else { return nil }
        return Timestamp(milliseconds: ms) - .now()
    }

    private func schedule(after wait: Duration, failures: Int) async {
        await agent.setNote(.realtimeFailures, String(failures))
        await agent.setNote(.realtimeRetryAt, String((Timestamp.now() + wait).milliseconds))
    }
}
