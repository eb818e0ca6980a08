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

    /// Runs one hook for one event: spawned with only stdin, stdout and stderr open, the event as JSON
    /// on stdin, its output logged line by line under its name, killed at ``HookTimeout``.
    private func run(_ name: String, _ event: HookEvent, directory: String, timeout: Duration) {
        let path = directory + "/" + name
        // Every end closes when this function returns, unless closed or handed over before.
        var ends: [Int32] = [0, 0]
        guard rcagent_pipe_cloexec(&ends) == 0 else {
            log.error("Failed to run hook \(name): \(SystemError("pipe"))")
            return
        }
        let stdinRead = FileDescriptor(ends[0])
        let stdinWrite = FileDescriptor(ends[1])
        guard rcagent_pipe_cloexec(&ends) == 0 else {
            log.error("Failed to run hook \(name): \(SystemError("pipe"))")
            return
        }
        let outputRead = FileDescriptor(ends[0])
        let outputWrite = FileDescriptor(ends[1])
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdinRead.rawValue, 0)
        posix_spawn_file_actions_adddup2(&actions, outputWrite.rawValue, 1)
        posix_spawn_file_actions_adddup2(&actions, outputWrite.rawValue, 2)
        // Nothing else the daemon has open reaches the hook (a socket, the database, another hook's
        // pipe), whether or not whoever opened it asked for close-on-exec.
        posix_spawn_file_actions_addclosefrom_np(&actions, 3)
        let environment = Environment.current().merging(event.environment()) { $1 }.map { "\($0.key)=\($0.value)" }
        // A process group of its own, so a timeout kills whatever the hook started too; SIGPIPE back
        // to its default (the daemon ignores it) and no signal blocked whatever this thread's mask,
        // as a shell script expects.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        posix_spawnattr_setpgroup(&attributes, 0)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        posix_spawnattr_setsigmask(&attributes, &unblocked)
        var pid: pid_t = 0
        let rc = withCStrings([path], environment) { argv, envp in
            posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        }
        // The hook's own ends: with them closed here, the hook's exit is our end of stream.
        stdinRead.close()
        outputWrite.close()
        guard rc == 0 else {
            // Loud: the hook did not see this event at all.
            log.error(
                "Failed to run hook \(name) for \(event.kind.rawValue) (\(event.changes.count) changed keys): "
                    + String(cString: strerror(rc)) + "; the hook missed this event")
            return
        }
        // The event on stdin, from a thread of its own: a hook that never reads must not stall us,
        // and the thread ends by the hook's timeout even when something the hook started (outside
        // its process group) holds stdin open without reading.
        let stdin = Array(event.stdin.utf8)
        let deadline = ContinuousClock.now + timeout
        _ = fcntl(stdinWrite.rawValue, F_SETFL, O_NONBLOCK)
        // Handed to the writer thread, which closes it when done (the hook then sees end of input).
        let writer = stdinWrite.release()
        let started = DetachedThread.start {
            let writer = FileDescriptor(writer)
            _ = Posix.writeAll(writer.rawValue, stdin) {
                // The pipe is full: wait for the hook to read, until its timeout.
                let left = deadline - ContinuousClock.now
                guard left > .zero else { return false }
                var poller = pollfd(fd: writer.rawValue, events: Int16(POLLOUT), revents: 0)
                _ = poll(&poller, 1, Int32(min(left.milliseconds, 1_000)))
                return true
            }
        }
        if !started {
            // Without the thread the hook gets an empty stdin rather than one that never ends.
            FileDescriptor(writer).close()
            log.warning("Failed to start the thread that writes hook \(name)'s stdin; it gets an empty stdin")
        }
        let timedOut = relayOutput(of: name, from: outputRead.rawValue, timeout: timeout)
        outputRead.close()
        if timedOut {
            kill(-pid, SIGKILL)
            log.warning("Hook \(name) timed out after \(DurationText.format(timeout)); killed")
        }
        var status: Int32 = 0
        _ = Posix.retrying { waitpid(pid, &status, 0) }
        if !timedOut {
            let exited = status & 0x7f == 0
            let code = (status >> 8) & 0xff
            if !exited {
                log.warning("Hook \(name) was killed by signal \(status & 0x7f)")
            } else if code != 0 {
                log.warning("Hook \(name) exited with status \(code)")
            }
        }
    }

    /// Logs the hook's output line by line until it closes it; `true` when the timeout ran out first.
    private func relayOutput(of name: String, from fd: Int32, timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        func flush(all: Bool) {
            while let newline = buffer.firstIndex(of: 10) {
                log.info("hook \(name): \(String(decoding: buffer[..<newline], as: UTF8.self))")
                buffer.removeSubrange(...newline)
            }
            // A line that never ends is logged in pieces, not held in memory without bound.
            if (all || buffer.count >= 4096) && !buffer.isEmpty {
                log.info("hook \(name): \(String(decoding: buffer, as: UTF8.self))")
                buffer = []
            }
        }
        while true {
            let left = deadline - ContinuousClock.now
            if left <= .zero { return true }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            // Nothing yet, or interrupted: look at the clock again.
            guard poll(&poller, 1, Int32(min(left.milliseconds, 1_000))) > 0 else { continue }
            let n = Posix.retrying { chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) } }
            if n <= 0 {
                flush(all: true)
                return false
            }
            buffer.append(contentsOf: chunk[0..<n])
            if buffer.count > 64 * 1024 { flush(all: true) } else { flush(all: false) }
        }
    }
}

/// Calls `body` with NULL-terminated C string arrays (argv and envp) that live for the call.
private func withCStrings<T>(
    _ argv: [String], _ envp: [String],
    _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>, UnsafePointer<UnsafeMutablePointer<CChar>?>) -> T
) -> T {
    let a = argv.map { strdup($0) } + [nil]
    let e = envp.map { strdup($0) } + [nil]
    defer {
        a.forEach { free($0) }
        e.forEach { free($0) }
    }
    return a.withUnsafeBufferPointer { ap in e.withUnsafeBufferPointer { ep in body(ap.baseAddress!, ep.baseAddress!) }
    }
}
