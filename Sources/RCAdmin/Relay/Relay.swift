@preconcurrency import Dispatch
import Glibc
import RCCore
import RCFirebase
import RCHTTP
import RCService
import Synchronization

/// Where the relay sends the stale ping for a new template version: an MQTT topic, an FCM topic.
protocol PingTarget: Sendable {
    /// Where it sends, as the ledger and the log name it (`mqtt URL TOPIC`, `fcm TOPIC`).
    var name: String { get }
    /// Returns once the receiving end acknowledged the ping for `version`.
    func ping(version: Int64) async throws(RelayError)
}

/// `rcadmin relay`: the seed's Cloud Function as a service on any Linux host. It follows the
/// project's template version over Firebase's realtime stream, as a client app does (the daemon's
/// protocol module, its own installation), and on each new version sends the stale ping carrying
/// that version to every target, once per version across restarts and reconnects (the ledger).
///
/// The stream loop (connect, read, reconnect with backoff) hands each announced version to the
/// confirmation loop, which fetches the template as a client would: only a version the project
/// really has is pinged (a version announced above the real one would otherwise be recorded as
/// relayed, and every real one below it skipped). It feeds the confirmed version to one delivery
/// loop per target, which pings its target when it is behind, retrying with backoff until it
/// acknowledges. Targets are independent: a broker that is down for hours does not hold back the
/// FCM ping. A newer version during retries is sent instead of the older one: a device only needs
/// the newest version.
final class Relay: Sendable {
    /// Why ``run()`` returned.
    enum End: Equatable {
        /// SIGTERM or SIGINT.
        case cancelled
        /// The project refused for good: featureDisabled, 403, an API key Google does not know, a
        /// project or app Firebase does not know (404 NOT_FOUND).
        case refused
    }

    private let stream: RealtimeStream
    private let fetcher: RemoteConfigFetcher
    private let targets: [any PingTarget]
    private let ledger: Mutex<RelayLedger>
    private let log: Logger
    private let notifier: SystemdNotifier
    private let project: String
    /// The newest version the stream announced, not yet confirmed by a fetch.
    private let heard = Mutex<Int64>(0)
    /// The newest version a fetch confirmed; the delivery loops read it before each attempt.
    private let announced = Mutex<Int64>(0)

    init(
        stream: RealtimeStream, fetcher: RemoteConfigFetcher, targets: [any PingTarget], ledger: RelayLedger,
        project: String, log: Logger, notifier: SystemdNotifier
    ) {
        self.stream = stream
        self.fetcher = fetcher
        self.targets = targets
        self.ledger = Mutex(ledger)
        self.project = project
        self.log = log
        self.notifier = notifier
    }

    /// Runs until the calling task is cancelled (SIGTERM), or the project refuses for good.
    func run() async -> End {
        // One wake-up channel per target, each holding at most one pending wake-up: a flood of
        // announcements costs each target one look at the newest version.
        let channels = targets.map { _ in AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1)) }
        let confirmations = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        notifier.ready(status: statusLine("starting"))
        log.notice("Relaying template versions of project \(project) to \(targets.map(\.name).joined(separator: ", "))")
        return await withTaskGroup(of: Void.self) { group in
            for (target, channel) in zip(targets, channels) {
                group.addTask { [self] in await deliver(to: target, channel.stream) }
            }
            group.addTask { [self] in
                await confirm(confirmations.stream) { for channel in channels { channel.continuation.yield() } }
            }
            if let interval = notifier.watchdogInterval {
                group.addTask { [notifier] in
                    while !Task.isCancelled {
                        notifier.watchdog()
                        try? await Task.sleep(for: interval / 2)
                    }
                }
            }
            let end = await follow { version in
                let newer = self.heard.withLock { newest in
                    defer { newest = max(newest, version) }
                    return version > newest
                }
                if newer { confirmations.continuation.yield() }
            }
            confirmations.continuation.finish()
            for channel in channels { channel.continuation.finish() }
            group.cancelAll()
            return end
        }
    }

    /// How many fetches may find an older template than the one announced before the announcement
    /// is taken for one of a version the project does not have. The SDKs retry too: a fetch can
    /// reach a replica that has not seen the publish yet.
    static let confirmationAttempts = 4

    /// The confirmation loop: on each wake-up, while a heard version is above the confirmed one,
    /// fetches the template and takes its version as the newest (waking the targets when it is
    /// newer). A version still above what the fetches find after ``confirmationAttempts`` is
    /// dropped, so a later real announcement below it counts as new again.
    private func confirm(_ wakeups: AsyncStream<Void>, wake: @escaping @Sendable () -> Void) async {
        for await _ in wakeups {
            var (older, failures) = (0, 0)
            while !Task.isCancelled {
                let wanted = heard.withLock { $0 }
                guard wanted > announced.withLock({ $0 }) else { break }
                let actual: Int64
                do throws(FirebaseError) {
                    actual = try await fetchedVersion()
                    failures = 0
                } catch {
                    await wait(afterFailure: &failures, "fetch the template announced as version \(wanted): \(error)")
                    continue
                }
                let newer = announced.withLock { newest in
                    defer { newest = max(newest, actual) }
                    return actual > newest
                }
                if newer { wake() }
                guard actual < wanted else { break }
                older += 1
                if older >= Self.confirmationAttempts {
                    log.warning(
                        "Not relaying template version \(wanted): the realtime stream announced it, but the "
                            + "project's template is version \(actual)")
                    heard.withLock { $0 = actual }
                    break
                }
                try? await Task.sleep(for: Self.backoff(older))
            }
        }
    }

    /// The version of the template a client fetch gets now.
    private func fetchedVersion() async throws(FirebaseError) -> Int64 {
        guard case let .document(document, _) = try await fetcher.fetch(etag: nil, type: "REALTIME/1"),
            case let .update(_, text) = document, let version = text.flatMap({ Int64($0) })
        else {
            throw FirebaseError(.badDocument, "Firebase fetch: the answer carries no template version")
        }
        return version
    }

    /// The stream loop: connects with the lowest version any target has, so the server announces
    /// the current one when a target is behind (after a restart, or a ping that never went out).
    private func follow(_ announce: @escaping @Sendable (Int64) -> Void) async -> End {
        var failures = 0
        while !Task.isCancelled {
            let lastKnown = ledger.withLock { ledger in targets.map { ledger.version(for: $0.name) }.min() ?? 0 }
            let opened = ContinuousClock.now
            let outcome = await stream.connect(lastKnownVersion: lastKnown, etag: nil) { [log] event in
                switch event {
                case .opened: log.info("Realtime stream open")
                case let .templatePublished(version): announce(version)
                case let .unreadable(text): log.warning("Ignoring an unreadable realtime message: \(text)")
                }
            }
            let wait: Duration
            switch outcome {
            case .disabled:
                log.error("Realtime updates are disabled for project \(project) (featureDisabled); the relay stops")
                return .refused
            case let .stopped(reason):
                log.error("Failed to open the realtime stream: \(reason); no retry can change that: the relay stops")
                return .refused
            case let .ended(retryInterval):
                // A stream that stayed open a while is no failure; one that keeps ending at once is.
                failures = ContinuousClock.now - opened < .seconds(30) ? failures + 1 : 0
                wait = max(retryInterval ?? .zero, failures == 0 ? .seconds(1) : Self.backoff(failures))
            case let .failed(reason, retryInterval):
                failures += 1
                wait = max(retryInterval ?? .zero, Self.backoff(failures))
                log.warning("Failed to open the realtime stream: \(reason); retrying in \(DurationText.format(wait))")
                notifier.status(statusLine("stream down: \(reason)"))
            }
            try? await Task.sleep(for: wait)
        }
        return .cancelled
    }

    /// The delivery loop of one target: on each wake-up, pings it if it is behind the newest version.
    private func deliver(to target: any PingTarget, _ wakeups: AsyncStream<Void>) async {
        for await _ in wakeups {
            var failures = 0
            while !Task.isCancelled {
                let version = announced.withLock { $0 }
                guard version > ledger.withLock({ $0.version(for: target.name) }) else { break }
                do throws(RelayError) {
                    try await target.ping(version: version)
                    try ledger.withLock { ledger throws(RelayError) in try ledger.record(version, for: target.name) }
                    log.notice("Relayed template version \(version) to \(target.name)")
                    notifier.status(statusLine("relayed version \(version)"))
                    break
                } catch {
                    await wait(
                        afterFailure: &failures, "relay template version \(version) to \(target.name): \(error)",
                        status: "\(target.name) failing: \(error)")
                }
            }
        }
    }

    private func statusLine(_ state: String) -> String { "Project \(project): \(state)" }

    /// Counts one more failure, logs it ("Failed to `what`", with the wait), shows `status` if any,
    /// and waits the ``backoff(_:)`` for that many failures: how the fetch and delivery loops retry.
    private func wait(afterFailure failures: inout Int, _ what: String, status: String? = nil) async {
        failures += 1
        let wait = Self.backoff(failures)
        log.warning("Failed to \(what); retrying in \(DurationText.format(wait))")
        if let status { notifier.status(statusLine(status)) }
        try? await Task.sleep(for: wait)
    }

    /// 1 s, 2 s, 4 s ... 5 min, each with up to a fifth more at random, so relays restarted together
    /// do not retry in step.
    static func backoff(_ failures: Int) -> Duration {
        let base = Backoff.step(failures: failures, base: .seconds(1), cap: .seconds(300))
        return base + Jitter.upTo(base / 5)
    }
}
