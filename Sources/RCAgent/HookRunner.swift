import CLinux
import Glibc
import RCCore
import RCService
import RCSystem
import Synchronization

/// Runs the executables in `HooksDirectory` after activations that changed something, on
/// stale-set/stale-cleared and on `activity-*` events (local integration). Hooks run in run-parts
/// order, one at a time, on a thread of their own — never in the daemon's critical path. Each gets
/// `RCAGENT_EVENT`, `RCAGENT_CHANGED_KEYS` (percent-encoded, bounded; see ``HookEvent/environment(maxKeysBytes:)``),
/// `RCAGENT_TEMPLATE_VERSION` and the event as JSON on stdin; its output is logged with its name;
/// it is killed after `HookTimeout`. Events that arrive
/// while hooks run are merged per kind, so a burst runs them once more, not once per event.
final class HookRunner: Sendable {
    /// Where the hooks are and how long each may run: a reload changes them in place, so the one
    /// hook thread stays the only one (a replaced runner let its hook overlap the new runner's).
    /// Read once per event: the directory is listed again for each, and one event's hooks all come
    /// from one directory, with one timeout, even when a reload lands while they run.
    private let settings: Mutex<(directory: String, timeout: Duration)>
    private let log: Logger
    /// The events waiting for the hook thread, and whether that thread runs.
    private struct Queue {
        var pending: [HookEvent] = []
        var running = false
        /// The overflow warning went out for the current backlog (cleared when the queue empties).
        var overflowReported = false
    }
    private let queue = Mutex(Queue())

    init(directory: String, timeout: Duration, log: Logger) {
        settings = Mutex((directory, timeout))
        self.log = log
    }

    /// Applies a reloaded `HooksDirectory=` and `HookTimeout=` from the next hook run on.
    func configure(directory: String, timeout: Duration) {
        settings.withLock { $0 = (directory, timeout) }
    }

    /// The hooks that would run now, in order: executable regular files, no hidden files, editor
    /// backups or package-manager leftovers.
    var hooks: [String] { Self.hooks(in: settings.withLock { $0.directory }) }

    /// The hooks in `directory` that would run now (see ``hooks``).
    static func hooks(in directory: String) -> [String] {
        FileBytes.directoryEntries(directory)
            .filter { name in
                !name.hasPrefix(".") && !name.hasSuffix("~") && !(name.hasPrefix("#") && name.hasSuffix("#"))
                    && ![".dpkg-old", ".dpkg-new", ".dpkg-dist", ".dpkg-tmp", ".swp", ".bak", ".orig", ".rej"]
                        .contains(where: name.hasSuffix)
            }
            .sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
            .filter { name in
                var info = stat()
                let path = directory + "/" + name
                return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG && access(path, X_OK) == 0
            }
    }

    /// Queues `event` for the hooks, merged into a waiting event of its kind, and starts the hook thread
    /// unless it runs already.
    func enqueue(_ event: HookEvent) {
        let (start, dropped) = queue.withLock { queue -> (Bool, Bool) in
            let dropped = HookEvent.queue(event, into: &queue.pending)
            // Said once per backlog, not once per dropped event: a flood must not flood the journal.
            let report = dropped && !queue.overflowReported
            if dropped { queue.overflowReported = true }
            defer { queue.running = true }
            return (!queue.running, report)
        }
        if dropped {
            log.warning(
                "Hooks fall behind: \(HookEvent.maximumPending) events wait; dropping the oldest activity events "
                    + "until they catch up")
        }
        guard start else { return }
        if !DetachedThread.start({ [self] in drain() }) {
            // No thread now: leave the events queued and let the next event try again, rather than
            // stay "running" with nothing running, which would stop hooks for good.
            queue.withLock { $0.running = false }
            log.error("Failed to start the hook thread; the hooks run with the next event")
        }
    }

    /// The hook thread's loop: runs every hook for each queued event, oldest first, until the queue is
    /// empty (then the next event starts a thread again).
    private func drain() {
        while let event = queue.withLock({ queue -> HookEvent? in
            if queue.pending.isEmpty {
                queue.running = false
                queue.overflowReported = false
                return nil
            }
            return queue.pending.removeFirst()
        }) {
            let (directory, timeout) = settings.withLock { $0 }
            for name in Self.hooks(in: directory) { run(name, event, directory: directory, timeout: timeout) }
        }
    }

    /// Runs one hook for one event (see ``SupervisedProcess``): the event as JSON on stdin, its output
    /// logged line by line under its name, killed at ``HookTimeout``.
    private func run(_ name: String, _ event: HookEvent, directory: String, timeout: Duration) {
        let environment = Environment.current().merging(event.environment()) { $1 }
        let (outcome, _) = SupervisedProcess.run(
            directory + "/" + name, label: "hook \(name)", environment: environment, stdin: Array(event.stdin.utf8),
            timeout: timeout, log: log)
        switch outcome {
        case let .notStarted(reason):
            // Loud: the hook did not see this event at all.
            log.error(
                "Failed to run hook \(name) for \(event.kind.rawValue) (\(event.changes.count) changed keys): "
                    + reason + "; the hook missed this event")
        case .timedOut:
            log.warning("Hook \(name) timed out after \(DurationText.format(timeout)); killed")
        case let .signaled(signal):
            log.warning("Hook \(name) was killed by signal \(signal)")
        case let .exited(code) where code != 0:
            log.warning("Hook \(name) exited with status \(code)")
        case .exited:
            break
        }
    }
}
