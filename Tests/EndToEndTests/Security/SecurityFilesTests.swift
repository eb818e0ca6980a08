import Foundation
import Glibc
import RCSystem
import TestSupport
import Testing

/// Issue 14 item 10 and the notes on files: what the files a config names, the files the agent
/// writes and a damaged state database can do to the daemon and the CLI. Real files, FIFOs and
/// symlinks; the built binaries end to end.
@Suite struct SecurityFilesTests {
    /// SIGTERM and the exit status, or nil when the daemon has not exited after `bound` seconds
    /// (a failure bound only: a daemon that stops at once passes at once).
    func stopPromptly(_ daemon: DaemonProcess, bound: Double = 20) -> Int32? {
        let pid = daemon.process.processIdentifier
        kill(pid, SIGTERM)
        guard exits(pid, within: bound) else {
            daemon.killHard()
            return nil
        }
        daemon.process.waitUntilExit()
        return daemon.process.terminationStatus
    }

    /// Whether process `pid` exits within `bound` seconds. waitid with WNOWAIT waits for the exit
    /// without reaping, so `Process` still sees its status.
    func exits(_ pid: Int32, within bound: Double) -> Bool {
        let exited = DispatchSemaphore(value: 0)
        Thread {
            var info = siginfo_t()
            while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR {}
            exited.signal()
        }.start()
        return exited.wait(timeout: .now() + bound) == .success
    }

    /// `rcagent ARGS` in `sandbox`, killed after `bound` seconds (a failure bound only): a CLI
    /// blocked behind a daemon stuck in open() fails the test instead of hanging the suite.
    func boundedCLI(_ sandbox: Sandbox, _ arguments: String..., bound: Double = 20) throws -> ProcessResult? {
        let process = Process()
        process.executableURL = Binaries.url("rcagent")
        process.arguments = arguments + ["--config", sandbox.configPath]
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let pid = process.processIdentifier
        let finished = exits(pid, within: bound)
        if !finished { kill(pid, SIGKILL) }
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard finished else { return nil }
        return ProcessResult(
            status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: stderr, as: UTF8.self))
    }

    func replaceWithFIFO(_ path: String) throws {
        unlink(path)
        guard mkfifo(path, 0o644) == 0 else { throw DaemonError("mkfifo \(path): errno \(errno)") }
    }

    @Test func aFIFOAtPathOrDefaultsNeverBlocksTheDaemon() throws {
        let sandbox = try Sandbox()
        try sandbox.publish(Sandbox.document(version: 1))
        var daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)

        // Live: the source file becomes a FIFO (inotify sees it and triggers a fetch, too).
        try replaceWithFIFO(sandbox.remotePath)
        let started = Date()
        let refused = try #require(try boundedCLI(sandbox, "fetch", "--force", "--wait"), "fetch --wait hung")
        let seconds = Date().timeIntervalSince(started)
        #expect(refused.status == 1)
        #expect(
            refused.stderr.contains("open \(sandbox.remotePath): is a FIFO, not a regular file"), "\(refused.stderr)")
        #expect(seconds < 5, "fetch --wait returned after \(seconds) s")
        #expect(try sandbox.cli("get", "key_0").stdout == "v1\n", "the last good values are served")
        #expect(stopPromptly(daemon) == 0, "SIGTERM stops the daemon")

        // At start: a FIFO at Defaults= as well. The daemon gets ready, keeps the stored defaults.
        try replaceWithFIFO(sandbox.defaultsPath)
        daemon = try sandbox.startDaemon()
        #expect(daemon.log.contains("open \(sandbox.defaultsPath): is a FIFO"), "\(daemon.log)")
        #expect(try sandbox.cli("get", "greeting").stdout == "hello\n", "the stored defaults are kept")
        #expect(try boundedCLI(sandbox, "fetch", "--force", "--wait")?.stderr.contains("is a FIFO") == true)
        #expect(try sandbox.cli("status").stdout.contains("daemon:       running"))
        #expect(try sandbox.cli("get", "key_0").stdout == "v1\n")
        #expect(stopPromptly(daemon) == 0, "SIGTERM stops the daemon")
    }

    @Test func aStateDirectoryOthersCanWriteIsSaidAtStart() throws {
        let sandbox = try Sandbox()
        // Template 1 stored before the second start: "ready" does not wait for the first fetch, and
        // on a loaded machine the first daemon was stopped before it had fetched.
        var daemon = try sandbox.startServing()
        #expect(!daemon.log.contains("The state directory"), "\(daemon.log)")
        #expect(stopPromptly(daemon) == 0)
        #expect(chmod(sandbox.statePath, 0o777) == 0)
        daemon = try sandbox.startDaemon()
        #expect(
            daemon.log.contains("<4>The state directory \(sandbox.statePath) can be written by every user (mode 777)"),
            "\(daemon.log)")
        let get = try sandbox.cli("get", "key_0")
        #expect(get.stdout == "v1\n", "\(get.stderr)\n\(daemon.log)")
        #expect(stopPromptly(daemon) == 0)
    }

    @Test func aDirectoryOrAnotherUsersSymlinkAtPathIsRefused() throws {
        let sandbox = try Sandbox()
        try sandbox.publish(Sandbox.document(version: 1))
        let daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)

        unlink(sandbox.remotePath)
        #expect(mkdir(sandbox.remotePath, 0o755) == 0)
        let directory = try sandbox.cli("fetch", "--force", "--wait")
        #expect(directory.status == 1)
        #expect(directory.stderr.contains("\(sandbox.remotePath): is a directory"), "\(directory.stderr)")
        rmdir(sandbox.remotePath)

        // A link planted by another user (uid 65534) to a file only root may read: never followed.
        let victim = sandbox.root.appendingPathComponent("root-only.json").path
        try sandbox.write(Sandbox.document(version: 66), to: victim)
        chmod(victim, 0o600)
        // Made aside and renamed into place: the watcher's fetch must never see a root-owned link.
        let link = sandbox.root.appendingPathComponent("planted").path
        #expect(symlink(victim, link) == 0)
        #expect(lchown(link, 65534, 65534) == 0)
        #expect(rename(link, sandbox.remotePath) == 0)
        let planted = try sandbox.cli("fetch", "--force", "--wait")
        #expect(planted.status == 1)
        #expect(
            planted.stderr.contains("\(sandbox.remotePath) is a symbolic link owned by uid 65534"), "\(planted.stderr)")
        #expect(try sandbox.cli("get", "key_0").stdout == "v1\n", "nothing from the victim file is served")

        // The same link owned by root is followed: the owner is what is refused, not links.
        #expect(lchown(sandbox.remotePath, 0, 0) == 0)
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        #expect(try sandbox.cli("get", "key_0").stdout == "v66\n")
        #expect(daemon.stop() == 0)
    }

    /// The same link swapped in *between* the check of the path and its open. Deterministic: strace
    /// delays the entry of every `openat` of `Path=` by name by 2 s, and the link goes in while the
    /// daemon sits there. The old code checked the links by path, then opened the path again: it read
    /// the root-only file and served it. Now the path is walked through descriptors and the file
    /// reopened from its own, so no name is resolved twice.
    @Test(.enabled(if: getuid() == 0, "needs root: the planted link belongs to another user"))
    func aSymlinkSwappedInWhileThePathIsOpenedIsNotFollowed() throws {
        let sandbox = try Sandbox()
        try sandbox.publish(Sandbox.document(version: 1))
        let victim = sandbox.root.appendingPathComponent("root-only.json").path
        try sandbox.write(Sandbox.document(version: 66), to: victim)
        chmod(victim, 0o600)
        let notify = try NotifySocket(path: sandbox.root.appendingPathComponent("notify").path)
        let daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: "/usr/bin/strace")
        daemon.arguments = [
            "-f", "-qq", "-o", "/dev/null", "-P", sandbox.remotePath, "-e", "trace=openat", "-e",
            "inject=openat:delay_enter=2000000", Binaries.url("rcagentd").path, "--config", sandbox.configPath,
        ]
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "RCAGENT_CONFIG")
        environment["NOTIFY_SOCKET"] = notify.path
        daemon.environment = environment
        try daemon.run()
        defer {
            // SIGTERM to rcagentd itself (strace's child): strace stops when its tracee does.
            let children =
                (try? String(
                    contentsOfFile: "/proc/\(daemon.processIdentifier)/task/\(daemon.processIdentifier)/children",
                    encoding: .utf8)) ?? ""
            for child in children.split(separator: " ").compactMap({ Int32($0) }) { kill(child, SIGTERM) }
            daemon.waitUntilExit()
        }
        #expect(notify.messages(until: { $0.contains("READY=1") }, timeout: 30).last?.contains("READY=1") == true)
        #expect(try eventually(30) { try sandbox.cli("get", "key_0").stdout == "v1\n" })

        #expect(try sandbox.cli("fetch", "--force").status == 0)
        // The old code sits in its delayed open of the path here; the new one opens by descriptor
        // (strace's -P does not see it) and may be done already.
        _ = try eventually(5) { try sandbox.cli("status").stdout.contains(", fetching (") }
        let link = sandbox.root.appendingPathComponent("planted").path
        #expect(symlink(victim, link) == 0)
        #expect(lchown(link, 65534, 65534) == 0)
        #expect(rename(link, sandbox.remotePath) == 0)
        #expect(try eventually(30) { !(try sandbox.cli("status").stdout.contains(", fetching (")) }, "the fetch ended")
        let refused = try sandbox.cli("fetch", "--force", "--wait")
        #expect(refused.stderr.contains("is a symbolic link owned by uid 65534"), "\(refused.stderr)")
        #expect(try sandbox.cli("get", "key_0").stdout == "v1\n", "nothing from the root-only file is served")
    }

    @Test func aSymlinkPlantedAtTheOldTemporaryNameIsNotFollowed() throws {
        // The installation credentials are the file the daemon writes atomically (firebase source).
        let (sandbox, server) = try FirebaseSourceTests().sandbox()
        try server.publish(version: 1, entries: ["greeting": "hallo"])
        try FileManager.default.createDirectory(atPath: sandbox.statePath, withIntermediateDirectories: true)
        let victim = sandbox.root.appendingPathComponent("victim").path
        try sandbox.write("precious\n", to: victim)
        let credentials = sandbox.statePath + "/installation.json"
        #expect(symlink(victim, credentials + ".tmp") == 0)

        let daemon = try sandbox.startDaemon()
        let fetched = try sandbox.cli("fetch", "--force", "--wait")
        #expect(fetched.status == 0, "\(fetched.stderr)")
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious\n", "the victim is unchanged")
        var info = stat()
        #expect(lstat(credentials, &info) == 0)
        #expect(info.st_mode & S_IFMT == S_IFREG)
        #expect(info.st_mode & 0o777 == 0o600)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: sandbox.statePath).filter {
            $0.contains(".tmp")
        }
        #expect(leftovers == ["installation.json.tmp"], "only the planted link, no temporary left behind")
        #expect(daemon.stop() == 0)
    }

    static let truncations: [Int] = [0, 50, 100, 4096, 20_000]

    @Test(arguments: truncations)
    func aTruncatedDatabaseFallsBackToTheDefaults(size: Int) throws {
        let sandbox = try Sandbox()
        try sandbox.publish(Sandbox.document(version: 1, keys: 400))
        var daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        #expect(daemon.stop() == 0)
        // Everything into the main file first: with the pages still in the WAL, a truncated main
        // file would not be damage at all.
        let checkpoint = try runProcess(
            "/usr/bin/sqlite3", [sandbox.databasePath, "PRAGMA wal_checkpoint(TRUNCATE);"], environment: [:])
        #expect(checkpoint.stdout == "0|0|0\n", "\(checkpoint)")
        #expect(truncate(sandbox.databasePath, off_t(size)) == 0)
        let damaged = try Data(contentsOf: URL(fileURLWithPath: sandbox.databasePath))

        // The CLI, daemon stopped: the default with a warning, exit 0, the file left as it is.
        let get = try sandbox.cli("get", "greeting")
        #expect(get.status == 0, "\(get.stderr)")
        #expect(get.stdout == "hello\n")
        #expect(get.stderr.contains("Warning: cannot read \(sandbox.databasePath)"), "\(get.stderr)")
        let status = try sandbox.cli("status")
        #expect(status.status == 0, "\(status.stderr)")
        #expect(status.stdout.contains("database:     unreadable: "), "\(status.stdout)")
        if size < 100 {
            #expect(status.stdout.contains(size == 0 ? "is empty (0 bytes)" : "is truncated (\(size) bytes"))
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: sandbox.databasePath)) == damaged, "the CLI changed nothing")

        // The daemon: moves it aside, starts from the defaults, marks stale, says so. (The source
        // is gone too, or its first fetch would clear the stale flag at once.)
        unlink(sandbox.remotePath)
        daemon = try sandbox.startDaemon()
        let moved = try FileManager.default.contentsOfDirectory(atPath: sandbox.statePath).filter {
            $0.hasPrefix("state.db.corrupt-") && !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm")
        }
        #expect(moved.count == 1, "\(daemon.log)")
        #expect(daemon.log.contains("<3>Failed to open \(sandbox.databasePath)"), "\(daemon.log)")
        let get2 = try sandbox.cli("get", "greeting")
        #expect(get2.stdout == "hello\n")
        #expect(get2.stderr.isEmpty, "a healthy database again")
        let json = try sandbox.cli("status", "--json").stdout
        #expect(json.contains(#""stale":{"set":true,"reason":"the state database was corrupt"#), "\(json)")
        #expect(json.contains(#""recovered":{"at":"#), "\(json)")
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }
}
