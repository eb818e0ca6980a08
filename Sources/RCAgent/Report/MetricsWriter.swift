import RCCore
import RCService
import RCSystem
import Synchronization

/// What the metrics file (``MetricsWriter``) needs of the agent: its status pushed at every change,
/// and the metrics of a status (the report's state plus the counters only the metrics show). The
/// one place the writer is coupled to the agent.
protocol MetricsSubject: StatusSource {
    func deviceMetrics(_ status: StatusSnapshot) async -> DeviceMetrics
}

extension Agent: MetricsSubject {}

/// The metrics file (`[Report] MetricsFile=`): the agent's ``DeviceMetrics`` in the Prometheus
/// text format, for node_exporter's textfile collector. Written at start and again whenever the
/// text changes, each time whole: a temporary file beside it, fsync'd, renamed over it (mode
/// 0644 whatever the umask: node_exporter reads it as another user), so a reader never sees half
/// a file. A write that fails (the directory is missing, read-only, full) is logged once, and again
/// only when the reason changes or an hour later; it is retried every ``retryInterval`` and on the
/// next change, and never stops the daemon. Writes are at least ``minimumInterval`` apart. It
/// runs on a queue of its own: fsync blocks.
actor MetricsWriter {
    let path: String
    private let subject: any MetricsSubject
    private let log: Logger
    private let executor = QueueExecutor(label: "rcagent.metrics")
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    /// Rings at every status the agent pushes; ``latest`` holds the newest (a burst keeps only it).
    private let inbox = Inbox<Void>()
    private let latest = Latest()

    static let retryInterval = Duration.seconds(30)
    /// The shortest time between two writes.
    static let minimumInterval = Duration.seconds(1)
    static let failureLogInterval = Duration.seconds(3600)

    /// The text last written (a change of what is shown, not of the clock, makes a write).
    private var written: String?
    /// The last failure logged: its reason and when.
    private var failure: (reason: String, at: ContinuousClock.Instant)?
    /// Set by ``retire()``: nothing is written any more.
    private var retired = false

    init(path: String, subject: any MetricsSubject, log: Logger) {
        self.path = path
        self.subject = subject
        self.log = log
    }

    /// Writes the file on every change until the calling task is cancelled.
    func run() async {
        let subscription = await subject.subscribeStatus { [inbox, latest] status in
            latest.status.withLock { $0 = status }
            inbox.send(())
        }
        while !Task.isCancelled {
            if let status = latest.status.withLock({ $0 }) { await writeIfChanged(status) }
            let wrote = ContinuousClock.now
            // Without a failure, a change wakes it; after one, the retry interval too.
            _ = await inbox.next(until: failure == nil ? nil : wrote + Self.retryInterval)
            // A burst of changes (a storm of activity messages) is one write per interval, the
            // last one with the final state: the changes that come meanwhile are taken together.
            while !Task.isCancelled, await inbox.next(until: wrote + Self.minimumInterval) != nil {}
        }
        await subject.unsubscribeStatus(subscription)
    }

    /// Writes the metrics of `status`, when their text is not the one last written.
    func writeIfChanged(_ status: StatusSnapshot) async {
        guard !retired else { return }
        let text = await subject.deviceMetrics(status).text
        // A reload may have retired the writer while it read (an actor's await lets that in).
        guard text != written, !retired else { return }
        do {
            try FileBytes.writeAtomically(path, Array(text.utf8), mode: 0o644, exactMode: true)
            written = text
            if failure != nil {
                failure = nil
                log.info("Writing the metrics to \(path) again")
            }
        } catch {
            let now = ContinuousClock.now
            // The same failure is the same call failing the same way (the temporary name differs each time).
            let reason = "\(error.operation.prefix { $0 != " " }) \(error.errno)"
            if let failure, failure.reason == reason, now - failure.at < Self.failureLogInterval { return }
            failure = (reason, now)
            log.warning("Failed to write the metrics to \(path): \(error), retrying every 30 s, ignoring")
        }
    }
}

extension MetricsWriter {
    /// The newest status pushed, shared with the subscription's closure.
    final class Latest: Sendable {
        let status = Mutex<StatusSnapshot?>(nil)
    }

    /// Stops writing and removes the file, in that order, on the writer's queue: no write of a
    /// change that comes in between brings the file back.
    func retire() {
        retired = true
        FileBytes.remove(path)
    }
}

/// The metrics file as a service of the config; a reload that drops or moves it removes the old
/// file (``retire()``): node_exporter would go on showing a device's state frozen at that time.
struct MetricsService: Service {
    let writer: MetricsWriter
    var name: String { "metrics file \(writer.path)" }

    func run() async throws {
        await writer.run()
    }

    func retire() async {
        await writer.retire()
    }
}
