import CLinux
import Foundation
import Glibc

/// The result of one finished process. `status`: its exit code, or 128 + the signal that killed it
/// (as a shell reports it).
public struct ProcessResult: Sendable {
    public let status: Int32
    public let stdout: String
    public let stderr: String

    public init(status: Int32, stdout: String, stderr: String) {
        self.status = status
        self.stdout = stdout
        self.stderr = stderr
    }
}

/// A child process started the way a shell starts one, not the way the test runner's threads
/// would pass it on: no signal blocked and every signal at its default (the runner's dispatch
/// threads block most signals, and a child inheriting that mask ignores `kill $!`), in a process
/// group of its own, stdout and stderr to pipes, stdin from a pipe (`input: true`) or /dev/null,
/// and no other descriptor of the runner's.
///
/// Its end is the child's own exit, seen through a pidfd, not the end of its pipes: a background
/// process it started (a web server in a README block) may hold them for good. Whatever is left in
/// its process group when it exits is killed, so nothing a test starts outlives it and keeps a port.
public final class Subprocess {
    public let pid: pid_t
    private var input: Int32
    private let output: Int32
    private let errors: Int32
    private let exit: Int32

    public init(
        _ path: String, _ arguments: [String], environment: [String: String]? = nil, in directory: String? = nil,
        input wantsInput: Bool = false
    ) throws {
        var inPipe: [Int32] = [-1, -1]
        var outPipe: [Int32] = [-1, -1]
        var errPipe: [Int32] = [-1, -1]
        guard rcagent_pipe_cloexec(&inPipe) == 0, rcagent_pipe_cloexec(&outPipe) == 0,
            rcagent_pipe_cloexec(&errPipe) == 0
        else { throw SubprocessError("pipe: \(String(cString: strerror(errno)))") }
        defer { [inPipe[0], outPipe[1], errPipe[1]].forEach { _ = close($0) } }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if wantsInput {
            posix_spawn_file_actions_adddup2(&actions, inPipe[0], 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
        // Nothing the test runner has open reaches the child, close-on-exec or not.
        posix_spawn_file_actions_addclosefrom_np(&actions, 3)
        if let directory { posix_spawn_file_actions_addchdir_np(&actions, directory) }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        let environment = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        guard rc == 0 else {
            [inPipe[1], outPipe[0], errPipe[0]].forEach { _ = close($0) }
            throw SubprocessError("cannot run \(path): \(String(cString: strerror(rc)))")
        }
        self.pid = pid
        exit = rcagent_pidfd_open(pid)
        guard exit >= 0 else { fatalError("pidfd_open(\(pid)): \(String(cString: strerror(errno)))") }
        input = inPipe[1]
        output = outPipe[0]
        errors = errPipe[0]
        if !wantsInput { closeInput() }
    }

    deinit {
        if input >= 0 { close(input) }
        [output, errors, exit].forEach { _ = close($0) }
    }

    /// Writes `text` to the child's stdin (all of it, or as much as it reads before it exits).
    public func write(_ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty, input >= 0 {
            let n = bytes.withUnsafeBytes { Glibc.write(input, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return }
            bytes = bytes.dropFirst(n)
        }
    }

    /// Ends the child's stdin.
    public func closeInput() {
        if input >= 0 { close(input) }
        input = -1
    }

    /// Waits for the child to exit and returns what it wrote. `bound` is a failure bound only: a
    /// child still running then is killed with its group, and the result says so on stderr.
    public func finish(bound: Duration = .seconds(600)) -> ProcessResult {
        let deadline = ContinuousClock.now + bound
        var collected: [Int32: [UInt8]] = [output: [], errors: []]
        var open = [output: true, errors: true]
        var exited = false
        while !exited {
            var fds = [pollfd(fd: exit, events: Int16(POLLIN), revents: 0)]
            for fd in [output, errors] where open[fd]! { fds.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
            let left = deadline - ContinuousClock.now
            if left <= .zero || poll(&fds, nfds_t(fds.count), Int32(left.components.seconds * 1000 + 1)) == 0 {
                collected[errors]! += Array("[Subprocess: still running after \(bound); killed]\n".utf8)
                break
            }
            exited = fds[0].revents != 0
            for entry in fds.dropFirst() where entry.revents != 0 {
                open[entry.fd] = Self.read(entry.fd, into: &collected[entry.fd]!, blocking: true)
            }
        }
        // The pipes now hold all the child wrote; what it left running in its group is stopped
        // before it is reaped (the zombie keeps the group's number from being reused meanwhile).
        kill(-pid, SIGKILL)
        for fd in [output, errors] where open[fd]! {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            while Self.read(fd, into: &collected[fd]!, blocking: false) {}
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let signal = status & 0x7f
        return ProcessResult(
            status: signal == 0 ? (status >> 8) & 0xff : 128 + signal,
            stdout: String(decoding: collected[output]!, as: UTF8.self),
            stderr: String(decoding: collected[errors]!, as: UTF8.self))
    }

    /// Reads what `fd` has into `buffer`; false at its end (or, not `blocking`, when it has no more now).
    private static func read(_ fd: Int32, into buffer: inout [UInt8], blocking: Bool) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        if n < 0 { return errno == EINTR || (blocking && errno == EAGAIN) }
        buffer += chunk[0..<n]
        return n > 0
    }
}

public struct SubprocessError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// Runs a program to its end with exactly `environment` (the test runner's when `nil`), its output
/// collected; `directory`: the working directory (the test runner's when `nil`).
public func runProcess(
    _ path: String, _ arguments: [String], environment: [String: String]? = nil, in directory: String? = nil
) throws -> ProcessResult {
    try Subprocess(path, arguments, environment: environment, in: directory).finish()
}
