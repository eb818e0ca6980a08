import Glibc
import RCCore
import RCSystem

/// `rcagent hold [--reason TEXT] -- COMMAND [ARG...]`: runs COMMAND while holding the hold lock
/// shared (as `flock(1)` would), so the daemon defers activations until it exits; the exit status is
/// COMMAND's. `hold --list` shows who holds it. A hold that cannot be taken (no state directory yet,
/// no permission) is said on stderr and COMMAND runs anyway: a payment must not fail because of the
/// config agent.
enum HoldCommand {
    static let spec = CommandSpec(
        "hold", arguments: ["-- COMMAND", "ARG..."], optionalArguments: 2, variadic: true,
        summary: "Run a command while holding off activations (exit status: the command's).",
        options: [
            .value("reason", "TEXT", "why (shown by hold --list and in status)"),
            .flag("list", "show the holds and their age"), .flag("json", "with --list: print JSON"),
        ], run: run)

    static func run(_ invocation: Invocation) throws(CLIError) -> Int32 {
        let command = invocation.arguments.positionals
        let stateDirectory: String
        do {
            stateDirectory = try invocation.config().stateDirectory
        } catch {
            // Holding off activations is best effort; running the command is not.
            guard !invocation.arguments.has("list") else { throw error }
            Output.err("Warning: \(error.message); using the built-in StateDirectory\n")
            stateDirectory = AgentConfig().stateDirectory
        }
        let path = HoldLock.path(stateDirectory: stateDirectory)
        if invocation.arguments.has("list") {
            guard command.isEmpty else { throw .usage("--list takes no command", command: invocation.command) }
            return try list(path: path, json: invocation.json)
        }
        guard !command.isEmpty else { throw .usage("missing COMMAND (after --)", command: invocation.command) }
        // Kept open (close-on-exec: COMMAND's own children do not inherit it) until this process exits.
        var lock: HoldLock?
        do {
            let opened = try HoldLock(path: path)
            try opened.holdShared()
            lock = opened
        } catch {
            Output.err("Warning: cannot hold off activations (\(error)); running the command anyway\n")
        }
        defer { withExtendedLifetime(lock) {} }
        return ChildCommand.run(command)
    }

    private static func list(path: String, json: Bool) throws(CLIError) -> Int32 {
        let holds: [Hold]
        do {
            holds = try HoldLock(path: path).holders()
        } catch {
            guard error.errno == ENOENT else { throw .failure("cannot read the holds: \(error)") }
            holds = []  // no lock file: nobody ever held
        }
        let now = Timestamp.now()
        if json {
            let items = holds.map { hold in
                JSONValue.object([
                    ("pid", .integer(Int64(hold.pid))),
                    ("since", hold.since.map { .string($0.iso8601) } ?? .null),
                    ("ageSeconds", hold.since.map { .integer((now - $0).milliseconds / 1_000) } ?? .null),
                    ("reason", hold.reason.map(JSONValue.string) ?? .null),
                ])
            }
            Output.raw(JSONValue.array(items).compactText + "\n")
            return ExitCode.ok
        }
        guard !holds.isEmpty else {
            Output.out("no holds\n")
            return ExitCode.ok
        }
        for hold in holds {
            let age = hold.since.map { DurationText.format(.seconds((now - $0).milliseconds / 1_000)) } ?? "?"
            Output.out("pid \(String(hold.pid)) held for \(age)\(hold.reason.map { ": " + $0 } ?? "")\n")
        }
        return ExitCode.ok
    }
}

/// Runs a command as a child with this process's standard streams and environment, and returns its
/// exit status the way a shell would (128 + N when signal N killed it; 127 not found, 126 not
/// runnable). SIGINT, SIGTERM, SIGHUP and SIGQUIT that reach this process are passed on to it, and
/// this process waits for it to exit: the hold ends when the command does, never before.
enum ChildCommand {
    static func run(_ arguments: [String]) -> Int32 {
        let forwarded = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]
        var blocked = sigset_t()
        sigemptyset(&blocked)
        for signal in forwarded + [SIGCHLD] { sigaddset(&blocked, signal) }
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &blocked, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in forwarded + [SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigmask(&attributes, &unblocked)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var pid: pid_t = 0
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let rc = argv.withUnsafeBufferPointer { pointer in
            posix_spawnp(&pid, arguments[0], nil, &attributes, pointer.baseAddress!, environ)
        }
        guard rc == 0 else {
            Output.err("Error: cannot run \(arguments[0]): \(String(cString: strerror(rc)))\n")
            return rc == ENOENT ? 127 : 126
        }
        while true {
            var info = siginfo_t()
            let signal = sigwaitinfo(&blocked, &info)
            if signal < 0 { continue }  // EINTR
            if signal != SIGCHLD {
                kill(pid, signal)
                continue
            }
            var status: Int32 = 0
            let reaped = waitpid(pid, &status, WNOHANG)
            guard reaped == pid else { continue }
            if status & 0x7f == 0 { return (status >> 8) & 0xff }
            if status & 0x7f != 0x7f { return 128 + (status & 0x7f) }
        }
    }
}
