import Foundation
import Glibc
import TestSupport
import Testing

/// Safe activation with the real daemon: `[Activation] HealthCheck=` makes every activation a
/// trial that a failing or hanging check rolls back (hooks hear `rolled-back`, the version is
/// rejected for good, a newer one is tried), a trial interrupted by kill -9 rolls back at the next
/// start, and `rcagent rollback [VERSION]` goes back to a kept snapshot.
@Suite struct ActivationTrialTests {
    /// A sandbox with a hooks directory recording every event, and `[Activation]` lines.
    func sandbox(activation: String) throws -> (sandbox: Sandbox, record: String) {
        let sandbox = try Sandbox(extraConfig: "")
        let hooks = sandbox.root.appendingPathComponent("hooks")
        try FileManager.default.createDirectory(at: hooks, withIntermediateDirectories: true)
        let record = sandbox.root.appendingPathComponent("record").path
        try script(
            hooks.appendingPathComponent("50-record").path,
            "echo \"$RCAGENT_EVENT $RCAGENT_TEMPLATE_VERSION $RCAGENT_CHANGED_KEYS\" >> \(record)")
        try sandbox.writeConfig(extra: "[Agent]\nHooksDirectory=\(hooks.path)\n[Activation]\n\(activation)")
        return (sandbox, record)
    }

    func script(_ path: String, _ body: String) throws {
        try ("#!/bin/sh\n" + body + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o755)
    }

    func lines(_ path: String) -> [String] {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    func json(_ result: ProcessResult) -> Any? { try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) }

    /// `history --json` as (version, outcome) pairs, newest first.
    func history(_ sandbox: Sandbox) throws -> [String] {
        let entries = json(try sandbox.cli("history", "--json")) as? [[String: Any]] ?? []
        return entries.map { "\($0["templateVersion"] as? String ?? "-") \($0["outcome"] as? String ?? "-")" }
    }

    func greeting(_ sandbox: Sandbox) throws -> String { try sandbox.cli("get", "greeting").stdout }

    func activation(_ sandbox: Sandbox) throws -> [String: Any] {
        (json(try sandbox.cli("status", "--json")) as? [String: Any])?["activation"] as? [String: Any] ?? [:]
    }

    /// A trial under way: the temp directory of its health check, the sandbox and its hooks' record,
    /// the daemon.
    struct Trial {
        let root: URL
        let sandbox: Sandbox
        let record: String
        let daemon: DaemonProcess

        func path(_ name: String) -> String { root.appendingPathComponent(name).path }
    }

    /// Writes the health check `check(root)` (the body of a shell script, given the directory for
    /// its files), starts a daemon that runs it with `timeout`, and waits until version 1 (greeting
    /// `one`) passed it and is active.
    func startWithVersion1Committed(timeout: String, check: (URL) throws -> String) throws -> Trial {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("trial-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let path = root.appendingPathComponent("check").path
        try script(path, try check(root))
        let (sandbox, record) = try sandbox(activation: "HealthCheck=\(path)\nHealthTimeout=\(timeout)")
        try sandbox.publish(Sandbox.document(version: 1, keys: 0, extra: ["greeting": "one"]))
        let daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--wait").status == 0)
        #expect(
            try eventually { try history(sandbox).first == "1 active" },
            "\((try? history(sandbox)) ?? []) \(daemon.log)")
        return Trial(root: root, sandbox: sandbox, record: record, daemon: daemon)
    }

    /// Publishes version 2 (greeting `two`) and fetches it: its trial starts.
    func publishVersion2(_ trial: Trial) throws {
        try trial.sandbox.publish(Sandbox.document(version: 2, keys: 0, extra: ["greeting": "two"]))
        #expect(try trial.sandbox.cli("fetch", "--force", "--wait").status == 0)
    }

    /// A check that fails version 2 only, recording each run.
    @Test func aFailingHealthCheckRollsBackRejectsTheVersionAndANewerOneIsTried() throws {
        let trial = try startWithVersion1Committed(timeout: "20s") { root in
            "echo \"$RCAGENT_TEMPLATE_VERSION $RCAGENT_PREVIOUS_TEMPLATE_VERSION\" >> \(root.path)/runs\n"
                + "[ \"$RCAGENT_TEMPLATE_VERSION\" = 2 ] && exit 3\nexit 0"
        }
        let (sandbox, record, daemon, runs) = (trial.sandbox, trial.record, trial.daemon, trial.path("runs"))
        // Logged just after the commit readers see.
        #expect(eventually { daemon.log.contains("Trial of template 1 passed its health check; committed") })

        let watch = try SocketClient(path: sandbox.socketPath)
        #expect(watch.watch())
        try publishVersion2(trial)
        let event = watch.event { $0["event"] as? String == "rolled-back" }
        #expect(event?["templateVersion"] as? String == "1", "the version active again")
        #expect(event?["changedKeys"] as? [String] == ["greeting"])
        #expect(try greeting(sandbox) == "one\n")
        #expect(try history(sandbox).prefix(2) == ["2 rolled-back: health check failed (exit 3)", "1 active"])
        #expect(eventually { lines(record).contains("rolled-back 1 greeting") }, "\(lines(record))")
        #expect(lines(runs).contains("2 1"), "the check hears the version on trial and the one before")
        #expect(
            eventually { daemon.log.contains("Rolled back template 2 (health check failed (exit 3))") }, "\(daemon.log)"
        )
        let status = try activation(sandbox)
        #expect(status["rejected"] as? [String] == ["2"])
        #expect((status["lastRollback"] as? [String: Any])?["templateVersion"] as? String == "2")
        #expect(status["trial"] is NSNull)
        #expect(status["deferred"] is NSNull)
        #expect(try sandbox.cli("status").stdout.contains("rejected:     2"))

        // The same version again is not activated, nor checked.
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        #expect(try greeting(sandbox) == "one\n")
        #expect(lines(runs).filter { $0.hasPrefix("2 ") }.count == 1, "\(lines(runs))")
        #expect(try history(sandbox).first == "2 rolled-back: health check failed (exit 3)")

        // A newer version is tried as usual.
        try sandbox.publish(Sandbox.document(version: 3, keys: 0, extra: ["greeting": "three"]))
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        #expect(try eventually { try history(sandbox).first == "3 active" }, "\(daemon.log)")
        #expect(try greeting(sandbox) == "three\n")
        #expect(daemon.stop() == 0)
    }

    @Test func aHangingHealthCheckIsKilledAtHealthTimeoutAndRolledBack() throws {
        // Hangs for version 2: the sleep is the behaviour under test (a check that never answers).
        let trial = try startWithVersion1Committed(timeout: "1s") { root in
            "[ \"$RCAGENT_TEMPLATE_VERSION\" = 2 ] || exit 0\necho $$ >> \(root.path)/pids\nexec sleep 300"
        }
        let (sandbox, record, daemon, pids) = (trial.sandbox, trial.record, trial.daemon, trial.path("pids"))
        try publishVersion2(trial)
        #expect(try eventually { try history(sandbox).first == "2 rolled-back: timed out" }, "\(daemon.log)")
        #expect(try greeting(sandbox) == "one\n")
        #expect(eventually { lines(record).contains("rolled-back 1 greeting") }, "\(lines(record))")
        let pid = try #require(lines(pids).first.flatMap { Int32($0) })
        defer { kill(pid, SIGKILL) }
        #expect(eventually { kill(pid, 0) != 0 }, "the hanging check was killed")
        #expect(daemon.log.contains("gave no verdict within 1s; killed"), "\(daemon.log)")
        #expect(daemon.stop() == 0)
    }

    /// `rcagent activate` while a trial's check runs activates nothing (a second trial would start
    /// over the first) and says which version is on trial, until when.
    @Test func activateDuringATrialSaysTheTrialRuns() throws {
        // For version 2 the check answers when the test writes to the FIFO: the trial runs until then.
        let trial = try startWithVersion1Committed(timeout: "5min") { root in
            try #require(mkfifo(root.appendingPathComponent("release").path, 0o600) == 0)
            return "[ \"$RCAGENT_TEMPLATE_VERSION\" = 2 ] || exit 0\ntouch \(root.path)/started\n"
                + "read line < \(root.path)/release"
        }
        let (sandbox, daemon) = (trial.sandbox, trial.daemon)
        defer { try? FileManager.default.removeItem(at: trial.root) }
        try publishVersion2(trial)
        #expect(eventually(60) { FileManager.default.fileExists(atPath: trial.path("started")) }, "\(daemon.log)")

        let asked = try sandbox.cli("activate")
        #expect(asked.status == 0, "\(asked.stderr)")
        #expect(asked.stderr.hasPrefix("a trial is running: template 2 until 20"), "\(asked.stderr)")
        #expect(asked.stderr.contains("at the latest (its health check decides; activate after it)"))
        let json = try sandbox.cli("activate", "--now", "--json")
        let onTrial = (self.json(json) as? [String: Any])?["trial"] as? [String: Any]
        #expect(onTrial?["templateVersion"] as? String == "2", "\(json.stdout)")

        let answer = try runProcess("/bin/sh", ["-c", "echo pass > \(trial.path("release"))"])
        #expect(answer.status == 0)
        #expect(try eventually { try history(sandbox).first == "2 active" }, "\(daemon.log)")
        #expect(try greeting(sandbox) == "two\n")
        #expect(daemon.stop() == 0)
    }

    @Test func aTrialInterruptedByKill9RollsBackAtTheNextStart() throws {
        // For version 2 the check says it started, then waits: the daemon dies during the trial.
        let trial = try startWithVersion1Committed(timeout: "5min") { root in
            "[ \"$RCAGENT_TEMPLATE_VERSION\" = 2 ] || exit 0\necho $$ >> \(root.path)/pids\nexec sleep 300"
        }
        let (sandbox, record, pids) = (trial.sandbox, trial.record, trial.path("pids"))
        var daemon = trial.daemon
        try publishVersion2(trial)
        #expect(eventually { !lines(pids).isEmpty }, "the check runs")
        #expect(try greeting(sandbox) == "two\n", "on trial, the new values are active")
        #expect(try history(sandbox).first == "2 trial")
        #expect((try activation(sandbox)["trial"] as? [String: Any])?["templateVersion"] as? String == "2")
        daemon.killHard()
        for pid in lines(pids).compactMap({ Int32($0) }) { kill(pid, SIGKILL) }

        daemon = try sandbox.startDaemon()
        #expect(try greeting(sandbox) == "one\n", "rolled back before the daemon was ready")
        #expect(try history(sandbox).prefix(2) == ["2 rolled-back: interrupted", "1 active"])
        #expect(eventually { lines(record).contains("rolled-back 1 greeting") }, "\(lines(record))")
        // The start-up fetch brings version 2 again: rejected, it stays out.
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        #expect(try greeting(sandbox) == "one\n")
        #expect(lines(pids).count == 1, "version 2 is not tried again")
        #expect(daemon.stop() == 0)
    }

    @Test func rollbackReactivatesAKeptSnapshotAndRejectsWhatCameAfter() throws {
        let (sandbox, record) = try sandbox(activation: "History=5")
        let daemon = try sandbox.startDaemon()
        for version in 1...3 {
            try sandbox.publish(Sandbox.document(version: version, keys: 0, extra: ["greeting": "v\(version)"]))
            #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        }
        #expect(try greeting(sandbox) == "v3\n")

        let back = try sandbox.cli("rollback")
        #expect(back.status == 0, "\(back.stderr)")
        #expect(back.stdout == "greeting\n")
        #expect(back.stderr.contains("rolled back to template 2"))
        #expect(try greeting(sandbox) == "v2\n")
        #expect(try history(sandbox) == ["3 rolled-back: by rollback", "2 active", "1 superseded"])
        #expect(eventually { lines(record).contains("rolled-back 2 greeting") }, "\(lines(record))")

        let json = try sandbox.cli("rollback", "1", "--json")
        #expect(json.status == 0, "\(json.stderr)")
        let answer = self.json(json) as? [String: Any]
        #expect(answer?["templateVersion"] as? String == "1")
        #expect(answer?["changedKeys"] as? [String] == ["greeting"])
        #expect(try greeting(sandbox) == "v1\n")
        #expect(try activation(sandbox)["rejected"] as? [String] == ["3", "2"])

        let refused = try sandbox.cli("rollback", "3")
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("version 3 is rejected on this device"), "\(refused.stderr)")
        #expect(try greeting(sandbox) == "v1\n")
        // A rejected version published again stays out.
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        #expect(try greeting(sandbox) == "v1\n")
        #expect(daemon.stop() == 0)
    }
}
