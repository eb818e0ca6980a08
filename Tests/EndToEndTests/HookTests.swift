import Foundation
import Glibc
import TestSupport
import Testing

/// Hooks in HooksDirectory after activations and stale changes (issue: local integration).
@Suite struct HookTests {
    /// A sandbox with a hooks directory; `agent`: more `[Agent]` lines.
    func sandbox(timeout: String = "5s", agent: String = "") throws -> (Sandbox, URL) {
        let sandbox = try Sandbox(extraConfig: "")
        let hooks = sandbox.root.appendingPathComponent("hooks")
        try FileManager.default.createDirectory(at: hooks, withIntermediateDirectories: true)
        try sandbox.writeConfig(extra: "[Agent]\nHooksDirectory=\(hooks.path)\nHookTimeout=\(timeout)\n\(agent)")
        return (sandbox, hooks)
    }

    func hook(_ name: String, in directory: URL, _ body: String, executable: Bool = true) throws {
        let path = directory.appendingPathComponent(name).path
        try ("#!/bin/sh\n" + body + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, executable ? 0o755 : 0o644)
    }

    func lines(_ path: String) -> [String] {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    @Test func aHookHearsTheActivationWithItsEnvironmentAndStdin() throws {
        let (sandbox, hooks) = try sandbox()
        let record = sandbox.root.appendingPathComponent("record").path
        try hook(
            "50-record", in: hooks,
            #"printf '%s|%s|%s|%s\n' "$RCAGENT_EVENT" "$RCAGENT_CHANGED_KEYS" "$RCAGENT_TEMPLATE_VERSION" "$(cat)" >> "#
                + record)
        try hook("50-record~", in: hooks, "echo backup >> \(record)")
        try hook("60-not-executable", in: hooks, "echo plain >> \(record)", executable: false)
        try sandbox.publish(Sandbox.document(version: 1, keys: 2, extra: ["greeting": "servus"]))
        let daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--wait").status == 0)
        #expect(eventually { lines(record).contains { $0.hasPrefix("activated|") } }, "\(daemon.log)")
        let activated = try #require(lines(record).first { $0.hasPrefix("activated|") })
        let fields = activated.split(separator: "|", maxSplits: 3).map(String.init)
        #expect(fields[1] == "greeting key_0 key_1")
        #expect(fields[2] == "1")
        let json = try #require(JSONSerialization.jsonObject(with: Data(fields[3].utf8)) as? [String: Any])
        #expect(json["event"] as? String == "activated")
        let changes = try #require(json["changes"] as? [String: [String: Any]])
        #expect(changes["greeting"]?["old"] as? String == "hello", "the default was the value before")
        #expect(changes["greeting"]?["new"] as? String == "servus")
        #expect(changes["greeting"]?["source"] as? String == "remote")
        #expect(changes["key_0"]?["old"] is NSNull)
        #expect(
            !lines(record).contains("backup") && !lines(record).contains("plain"),
            "backups and non-executables do not run")

        // Stale set and cleared run the hooks too.
        try sandbox.publish(Sandbox.document(version: 2, keys: 2, extra: ["greeting": "servus"]))
        #expect(try sandbox.cli("notify", "--wait", #"{"data":{"CONFIG_STATE":"STALE"}}"#).status == 0)
        #expect(
            eventually {
                lines(record).contains { $0.hasPrefix("stale-set|") }
                    && lines(record).contains { $0.hasPrefix("stale-cleared|") }
            }, "\(lines(record))")
        daemon.stop()
    }

    @Test func aSlowHookIsKilledAndAFailingOneLoggedWithoutStoppingTheOthers() throws {
        let (sandbox, hooks) = try sandbox(timeout: "1s")
        let record = sandbox.root.appendingPathComponent("record").path
        // A hook that outlives HookTimeout=1s: the sleep is the behaviour under test.
        try hook("10-slow", in: hooks, "echo starting slowly\nsleep 30")
        try hook("20-fail", in: hooks, "echo about to fail >&2\nexit 1")
        try hook("30-record", in: hooks, "echo \"$RCAGENT_EVENT $RCAGENT_TEMPLATE_VERSION\" >> \(record)")
        try sandbox.publish(Sandbox.document(version: 1))
        let daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--wait").status == 0)
        #expect(eventually { lines(record).contains("activated 1") }, "\(daemon.log)")
        #expect(daemon.log.contains("Hook 10-slow timed out after 1s; killed"))
        #expect(daemon.log.contains("hook 10-slow: starting slowly"))
        #expect(daemon.log.contains("hook 20-fail: about to fail"))
        #expect(daemon.log.contains("Hook 20-fail exited with status 1"))
        // The daemon kept answering meanwhile, and the next activation runs the hooks again.
        try sandbox.publish(Sandbox.document(version: 2))
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        #expect(eventually { lines(record).contains("activated 2") }, "\(daemon.log)")
        daemon.stop()
    }

    @Test func theActivationAtStartRunsTheHooks() throws {
        let (sandbox, hooks) = try sandbox()
        try sandbox.writeConfig(extra: "[Agent]\nHooksDirectory=\(hooks.path)\nActivation=on-start")
        let record = sandbox.root.appendingPathComponent("record").path
        try hook(
            "50-record", in: hooks,
            "echo \"$RCAGENT_EVENT $RCAGENT_TEMPLATE_VERSION $RCAGENT_CHANGED_KEYS\" >> \(record)")
        try sandbox.publish(Sandbox.document(version: 1, keys: 1))
        var daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--wait").status == 0)
        #expect(try sandbox.cli("get", "key_0").status == 1, "fetched, waiting for the next start")
        #expect(daemon.stop() == 0)
        #expect(lines(record).isEmpty)

        daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("get", "key_0").stdout == "v1\n")
        #expect(eventually { lines(record) == ["activated 1 key_0"] }, "\(lines(record)) \(daemon.log)")
        #expect(daemon.log.contains("Activated template 1 fetched before this start: 1 key(s) changed: key_0"))
        #expect(daemon.stop() == 0)
    }

    /// Something a hook starts outside its process group keeps stdin open and never reads it: the
    /// thread writing the event gives up at the hook's timeout instead of staying blocked for good
    /// (one leaked thread per run).
    @Test func stdinHeldOpenByAnEscapedChildDoesNotKeepAThread() throws {
        let (sandbox, hooks) = try sandbox(timeout: "1s")
        let pids = sandbox.root.appendingPathComponent("pids").path
        // The escaped child sleeps to hold stdin open past the hook's timeout (the case under test).
        try hook("50-escape", in: hooks, "exec 3<&0\nsetsid sleep 60 <&3 >/dev/null 2>&1 & echo $! >> \(pids)\nexit 0")
        try sandbox.publish(Sandbox.document(version: 1))
        let daemon = try sandbox.startDaemon()
        defer { for pid in lines(pids).compactMap({ Int32($0) }) { kill(pid, SIGKILL) } }
        let threads = daemon.threadCount
        // Each event on stdin is far beyond a pipe's 64 KiB, so the writer blocks on the held pipe.
        // (Through fd 3: sh gives a background command /dev/null unless its stdin is redirected from
        // another descriptor.)
        for version in 2...4 {
            try sandbox.publish(Sandbox.document(version: version, keys: 3_000))
            #expect(try sandbox.cli("fetch", "--wait").status == 0)
        }
        #expect(eventually { lines(pids).count == 4 }, "start and three fetches: \(daemon.log)")
        // (+2: the runtime's own worker threads come and go; three stuck writers would stay.)
        #expect(
            eventually(10) { daemon.threadCount <= threads + 2 }, "\(daemon.threadCount) threads, \(threads) before")
        #expect(daemon.stop() == 0)
    }

    /// A hook starts as a shell would start it: no signal blocked or ignored, whatever the mask of
    /// the daemon thread that starts it (a mask inherited from a runtime thread would make `kill $!`
    /// and `timeout` in a hook script do nothing). Signals 1 to 31: glibc keeps 32 and 33 for itself,
    /// and the test runner's disposition of those reaches the daemon and cannot be changed.
    @Test func aHookStartsWithNoSignalBlockedOrIgnored() throws {
        let (sandbox, hooks) = try sandbox()
        let record = sandbox.root.appendingPathComponent("record").path
        try hook("50-signals", in: hooks, "grep -E '^Sig(Blk|Ign):' /proc/self/status >> \(record)")
        try sandbox.publish(Sandbox.document(version: 1))
        let daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--wait").status == 0)
        #expect(eventually { lines(record).count == 2 }, "\(daemon.log)")
        let masks = lines(record).map { $0.split(separator: "\t").last.flatMap { UInt64($0, radix: 16) } }
        #expect(masks.map { $0.map { $0 & 0x7fff_ffff } } == [0, 0], "\(lines(record))")
        #expect(daemon.stop() == 0)
    }
}
