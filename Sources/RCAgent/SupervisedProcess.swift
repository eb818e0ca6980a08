import CLinux
import Glibc
import RCCore
import RCService
import RCSystem

/// A program run the way hooks and the health check run: in a process group of its own (a timeout
/// kills whatever it started too), with only stdin, stdout and stderr open, SIGPIPE at its default
/// and no signal blocked, `stdin` fed from a thread of its own, its output (stdout and stderr
/// together) logged line by line under `label` with lines bounded, and the whole group killed when
/// `timeout` runs out.
enum SupervisedProcess {
    /// How it ended.
    enum Outcome: Sendable, Equatable {
        case exited(Int32)
        case signaled(Int32)
        /// Killed at the timeout.
        case timedOut
        /// Never ran; the reason.
        case notStarted(String)
    }

    /// The most output kept for the caller (the start of it); all of it is logged.
    static let keptOutput = 4_096

    /// Runs `path` and waits for it; returns how it ended and the start of its output.
    static func run(
        _ path: String, label: String, environment: [String: String], stdin: [UInt8], timeout: Duration, log: Logger
    ) -> (outcome: Outcome, output: String) {
        // Every end closes when this function returns, unless closed or handed over before.
        var ends: [Int32] = [0, 0]
        guard rcagent_pipe_cloexec(&ends) == 0 else { return (.notStarted("\(SystemError("pipe"))"), "") }
        let stdinRead = FileDescriptor(ends[0])
        let stdinWrite = FileDescriptor(ends[1])
        guard rcagent_pipe_cloexec(&ends) == 0 else { return (.notStarted("\(SystemError("pipe"))"), "") }
        let outputRead = FileDescriptor(ends[0])
        let outputWrite = FileDescriptor(ends[1])
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdinRead.rawValue, 0)
        posix_spawn_file_actions_adddup2(&actions, outputWrite.rawValue, 1)
        posix_spawn_file_actions_adddup2(&actions, outputWrite.rawValue, 2)
        // Nothing else the daemon has open reaches the program (a socket, the database, a hook's
        // pipe), whether or not whoever opened it asked for close-on-exec.
        posix_spawn_file_actions_addclosefrom_np(&actions, 3)
        // A process group of its own, so a timeout kills whatever it started too; SIGPIPE back to its
        // default (the daemon ignores it) and no signal blocked whatever this thread's mask, as a
        // shell script expects.
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
        let rc = withCStrings([path], environment.map { "\($0.key)=\($0.value)" }) { argv, envp in
            posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        }
        // The program's own ends: with them closed here, its exit is our end of stream.
        stdinRead.close()
        outputWrite.close()
        guard rc == 0 else { return (.notStarted(String(cString: strerror(rc))), "") }
        // Stdin from a thread of its own: a program that never reads must not stall us, and the thread
        // ends by the timeout even when something it started (outside its group) holds stdin open.
        let deadline = ContinuousClock.now + timeout
        _ = fcntl(stdinWrite.rawValue, F_SETFL, O_NONBLOCK)
        // Handed to the writer thread, which closes it when done (the program then sees end of input).
        let writer = stdinWrite.release()
        let started = DetachedThread.start {
            let writer = FileDescriptor(writer)
            _ = Posix.writeAll(writer.rawValue, stdin) {
                // The pipe is full: wait for the program to read, until its timeout.
                let left = deadline - ContinuousClock.now
                guard left > .zero else { return false }
                var poller = pollfd(fd: writer.rawValue, events: Int16(POLLOUT), revents: 0)
                _ = poll(&poller, 1, Int32(min(left.milliseconds, 1_000)))
                return true
            }
        }
        if !started {
            // Without the thread the program gets an empty stdin rather than one that never ends.
            FileDescriptor(writer).close()
            log.warning("Failed to start the thread that writes \(label)'s stdin; it gets an empty stdin")
        }
        var output = ""
        let timedOut = relayOutput(of: label, from: outputRead.rawValue, deadline: deadline, log: log) { line in
            if output.utf8.count < keptOutput { output += String(line.prefix(keptOutput - output.utf8.count)) + "\n" }
        }
        outputRead.close()
        if timedOut { kill(-pid, SIGKILL) }
        var status: Int32 = 0
        _ = Posix.retrying { waitpid(pid, &status, 0) }
        if timedOut { return (.timedOut, output) }
        return (status & 0x7f == 0 ? .exited((status >> 8) & 0xff) : .signaled(status & 0x7f), output)
    }

    /// Logs the output line by line until it closes; `true` when the deadline came first.
    private static func relayOutput(
        of label: String, from fd: Int32, deadline: ContinuousClock.Instant, log: Logger, keep: (String) -> Void
    ) -> Bool {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        func emit(_ bytes: ArraySlice<UInt8>) {
            let line = String(decoding: bytes, as: UTF8.self)
            log.info("\(label): \(line)")
            keep(line)
        }
        func flush(all: Bool) {
            while let newline = buffer.firstIndex(of: 10) {
                emit(buffer[..<newline])
                buffer.removeSubrange(...newline)
            }
            // A line that never ends is logged in pieces, not held in memory without bound.
            if (all || buffer.count >= 4096) && !buffer.isEmpty {
                emit(buffer[...])
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

    /// Calls `body` with NULL-terminated C string arrays (argv and envp) that live for the call.
    private static func withCStrings<T>(
        _ argv: [String], _ envp: [String],
        _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>, UnsafePointer<UnsafeMutablePointer<CChar>?>) -> T
    ) -> T {
        let a = argv.map { strdup($0) } + [nil]
        let e = envp.map { strdup($0) } + [nil]
        defer {
            a.forEach { free($0) }
            e.forEach { free($0) }
        }
        return a.withUnsafeBufferPointer { ap in
            e.withUnsafeBufferPointer { ep in body(ap.baseAddress!, ep.baseAddress!) }
        }
    }
}
