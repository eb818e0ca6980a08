import Foundation
import Glibc
import RCCore
import RCStore
import RCSystem
import TestSupport
import Testing

/// `rcagentd` and `rcagent` together, as systemd and a shell script would use them.
@Suite struct DaemonTests {
    @Test func readyArrivesBeforeTheFirstFetchCompletesAndStopIsClean() throws {
        let sandbox = try Sandbox()
        try sandbox.publish(Sandbox.document(version: 1))
        let daemon = try DaemonProcess(sandbox)
        let untilReady = try daemon.waitUntilReady()
        // The READY message reports the cache as loaded: nothing fetched yet.
        #expect(untilReady.last?.contains("STATUS=Serving template - (0 keys)") == true, "\(untilReady)")
        // The fetch completes afterwards, and its STATUS line follows READY on the same socket.
        let after = daemon.notify.messages(until: { $0.contains("Template 1 active") })
        #expect(after.last?.contains("Template 1 active, 3 keys") == true, "\(after)\n\(daemon.log)")
        #expect(FileManager.default.fileExists(atPath: sandbox.socketPath))

        #expect(daemon.stop() == 0)
        let stopping = daemon.notify.messages(until: { $0.contains("STOPPING=1") })
        #expect(stopping.last?.contains("STOPPING=1") == true)
        #expect(!FileManager.default.fileExists(atPath: sandbox.socketPath), "the socket file must be removed")
        #expect(daemon.log.contains("<5>Stopped"))
    }

    @Test func watchdogPingsAtHalfTheInterval() throws {
        let sandbox = try Sandbox()
        try sandbox.publish(Sandbox.document(version: 1))
        // As systemd with WatchdogSec=0.4s: WATCHDOG_USEC without WATCHDOG_PID applies to any pid.
        let daemon = try DaemonProcess(sandbox, environment: ["WATCHDOG_USEC": "400000"])
        try daemon.waitUntilReady()
        let start = Date()
        var pings = 0
        while pings < 3, let message = daemon.notify.next(timeout: 5) {
            if message.contains("WATCHDOG=1") { pings += 1 }
        }
        #expect(pings == 3, "\(daemon.log)")
        #expect(Date().timeIntervalSince(start) < 5)
        #expect(daemon.stop() == 0)
    }

    @Test func socketIsGroupOwnedMode0660() throws {
        let sandbox = try Sandbox()
        try sandbox.publish(Sandbox.document(version: 1))
        let daemon = try sandbox.startDaemon()
        let attributes = try FileManager.default.attributesOfItem(atPath: sandbox.socketPath)
        #expect((attributes[.posixPermissions] as? Int) == 0o660)
        daemon.stop()
    }

    @Test func editingTheSourceFileChangesTheValue() throws {
        let sandbox = try Sandbox()
        try sandbox.publish(Sandbox.document(version: 1))
        let daemon = try sandbox.startDaemon()
        let watcher = try SocketClient(path: sandbox.socketPath)
        #expect(watcher.watch())
        // Wait for the startup fetch so the edit below is a second, separate change.
        if try sandbox.cli("get", "key_0").stdout != "v1\n" {
            _ = watcher.event { $0["event"] as? String == "activated" && $0["templateVersion"] as? String == "1" }
        }
        try sandbox.publish(Sandbox.document(version: 2, extra: ["added": "x"]))
        let activated = watcher.event {
            $0["event"] as? String == "activated" && $0["templateVersion"] as? String == "2"
        }
        #expect(activated?["changedKeys"] as? [String] == ["added", "key_0", "key_1", "key_2"], "\(daemon.log)")
        #expect(try sandbox.cli("get", "key_0").stdout == "v2\n")
        #expect(try sandbox.cli("get", "added", "--json").stdout.contains(#""source":"remote""#))
        daemon.stop()
    }

    @Test func notifySetsStaleFetchesAndClearsIt() throws {
        let sandbox = try Sandbox()
        try sandbox.publish(Sandbox.document(version: 1))
        let daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--wait").status == 0)  // startup fetch done (or done now)
        let watcher = try SocketClient(path: sandbox.socketPath)
        #expect(watcher.watch())
        try sandbox.publish(Sandbox.document(version: 2))
        // The inotify-triggered fetch may already race us; the ping still has to set and clear stale.
        let notify = try sandbox.cli("notify", #"{"data":{"CONFIG_STATE":"STALE"}}"#)
        #expect(notify.status == 0, "\(notify.stderr)")
        let set = watcher.event { $0["event"] as? String == "stale-set" }
        #expect(set?["reason"] as? String == "socket: CONFIG_STATE=STALE")
        #expect(watcher.event { $0["event"] as? String == "stale-cleared" } != nil)
        let status = try sandbox.cli("status", "--json")
        let json = try #require(JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        #expect((json["stale"] as? [String: Any])?["set"] as? Bool == false)
        #expect((json["daemon"] as? [String: Any])?["running"] as? Bool == true)
        #expect((json["active"] as? [String: Any])?["templateVersion"] as? String == "2")
        daemon.stop()
    }

    @Test func fullEnvelopeAndVersionRule() throws {
        let sandbox = try Sandbox()
        try sandbox.publish(Sandbox.document(version: 5))
        let daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--wait").status == 0)
        let old = try sandbox.cli(
            "notify", #"{"message":{"topic":"PUSH_RC","data":{"CONFIG_STATE":"STALE","templateVersion":"5"}}}"#)
        #expect(old.stdout == "ignored: template 5 is at or below the current 5\n")
        let status = try sandbox.cli("status", "--json")
        #expect(status.stdout.contains(#""stale":{"set":false"#))
        let bad = try sandbox.cli("notify", #"{"data":["CONFIG_STATE"]}"#)
        #expect(bad.status == 1)
        #expect(bad.stderr.contains("\"data\" must be an object"))
        daemon.stop()
    }

    @Test func staleFlagSetWhileDownMakesTheNextStartFetch() throws {
        let sandbox = try Sandbox(extraConfig: "[Agent]\nMinimumFetchInterval=12h")
        try sandbox.publish(Sandbox.document(version: 1))
        var daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--wait").status == 0)
        #expect(daemon.stop() == 0)

        // Changed while the daemon is down: a restart within the interval does not fetch...
        try sandbox.publish(Sandbox.document(version: 2))
        daemon = try sandbox.startDaemon()
        let skipped = try sandbox.cli("fetch", "--wait", "--json")
        #expect(skipped.stdout.contains(#""outcome":"skipped""#), "\(skipped.stdout)")
        #expect(try sandbox.cli("get", "key_0").stdout == "v1\n")
        #expect(daemon.stop() == 0)

        // ...but a stale flag set with the daemon down does.
        let mark = try sandbox.cli("mark-stale", "--reason", "offline edit")
        #expect(mark.stdout == "stale flag set\n")
        daemon = try sandbox.startDaemon()
        let watcher = try SocketClient(path: sandbox.socketPath)
        #expect(watcher.watch())
        if try sandbox.cli("get", "key_0").stdout != "v2\n" {
            #expect(watcher.event { $0["event"] as? String == "stale-cleared" } != nil, "\(daemon.log)")
        }
        #expect(try sandbox.cli("get", "key_0").stdout == "v2\n")
        daemon.stop()
    }

    @Test func manualActivationWaitsForActivate() throws {
        let sandbox = try Sandbox(extraConfig: "[Agent]\nActivation=manual")
        try sandbox.publish(Sandbox.document(version: 1))
        let daemon = try sandbox.startDaemon()
        let fetch = try sandbox.cli("fetch", "--force", "--wait")
        #expect(fetch.status == 0)
        #expect(try sandbox.cli("get", "key_0").status == 1, "fetched values must not be active yet")
        let activate = try sandbox.cli("activate")
        #expect(activate.stdout == "key_0\nkey_1\nkey_2\n")
        #expect(try sandbox.cli("get", "key_0").stdout == "v1\n")
        let again = try sandbox.cli("activate")
        #expect(again.stdout.isEmpty)
        #expect(again.stderr == "nothing to activate\n")
        daemon.stop()
    }

    @Test func onStartActivationAppliesAtTheNextStart() throws {
        let sandbox = try Sandbox(extraConfig: "[Agent]\nActivation=on-start")
        try sandbox.publish(Sandbox.document(version: 1))
        var daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        #expect(try sandbox.cli("get", "key_0").status == 1)
        #expect(daemon.stop() == 0)
        daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("get", "key_0").stdout == "v1\n")
        daemon.stop()
    }

    @Test func garbageDatabaseIsQuarantinedAndTheDaemonComesUpOnDefaults() throws {
        let sandbox = try Sandbox()  // no source file: the fetch fails, values stay defaults
        try FileManager.default.createDirectory(atPath: sandbox.statePath, withIntermediateDirectories: true)
        let garbage = Data((0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 7) })
        try garbage.write(to: URL(fileURLWithPath: sandbox.databasePath))
        let daemon = try sandbox.startDaemon()
        let moved = try FileManager.default.contentsOfDirectory(atPath: sandbox.statePath).filter {
            $0.hasPrefix("state.db.corrupt-")
        }
        #expect(moved.count == 1)
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: sandbox.statePath + "/" + moved[0])) == garbage,
            "the bad file is kept as it was")
        #expect(try sandbox.cli("get", "greeting").stdout == "hello\n")
        let status = try sandbox.cli("status", "--json").stdout
        #expect(status.contains(#""stale":{"set":true,"reason":"the state database was corrupt"#), "\(status)")
        #expect(daemon.log.contains("<3>Failed to open \(sandbox.databasePath)"))
        daemon.stop()
    }

    @Test func badSourceDocumentKeepsTheLastGoodSnapshot() throws {
        let sandbox = try Sandbox()
        try sandbox.publish(Sandbox.document(version: 1))
        let daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--wait").status == 0)
        try sandbox.publish(#"{"state": "UPDATE", "entries": {"key_0": "#)
        let failed = try sandbox.cli("fetch", "--force", "--wait")
        #expect(failed.status == 1)
        #expect(failed.stderr.contains("invalid JSON"))
        #expect(try sandbox.cli("get", "key_0").stdout == "v1\n")
        let status = try sandbox.cli("status", "--json").stdout
        #expect(status.contains(#""status":"failure""#))
        #expect(
            try sandbox.cli("fetch", "--force", "--wait").status == 1,
            "a person's forced fetch is not held by the backoff")
        daemon.stop()
    }

    /// A second daemon with a state directory of its own but the running one's socket stops at
    /// the socket (one with the same state directory stops earlier, at its lock: below).
    @Test func aSecondDaemonDoesNotTakeTheSocketOfARunningOne() throws {
        let sandbox = try Sandbox()
        try sandbox.publish(Sandbox.document(version: 1))
        let first = try sandbox.startDaemon()
        let config = try String(contentsOfFile: sandbox.configPath, encoding: .utf8)
        let otherConfig = sandbox.root.appendingPathComponent("other.conf").path
        try config.replacingOccurrences(
            of: "StateDirectory=\(sandbox.statePath)", with: "StateDirectory=\(sandbox.statePath)2"
        )
        .write(toFile: otherConfig, atomically: true, encoding: .utf8)
        let second = try DaemonProcess(sandbox, arguments: ["--config", otherConfig])
        second.process.waitUntilExit()
        #expect(second.process.terminationStatus == 1)
        #expect(second.log.contains("another rcagentd is running there"), "\(second.log)")
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0, "the first daemon still answers")
        first.stop()
    }

    /// A second daemon on the same state directory stops at its lock, whatever socket it names
    /// (another socket: without the lock it would have run beside the first), and the first runs
    /// on. The lock goes with the first daemon's process: a third, started after it, runs.
    @Test func aSecondDaemonOnTheSameStateDirectoryStopsAtItsLock() throws {
        let sandbox = try Sandbox()
        try sandbox.publish(Sandbox.document(version: 1))
        let first = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--wait").status == 0)
        let otherSocket = sandbox.root.appendingPathComponent("other.sock").path
        let config = try String(contentsOfFile: sandbox.configPath, encoding: .utf8)
        try #require(config.contains("Socket=\(sandbox.socketPath)"), "\(config)")
        let otherConfig = sandbox.root.appendingPathComponent("other.conf").path
        try config.replacingOccurrences(of: "Socket=\(sandbox.socketPath)", with: "Socket=\(otherSocket)")
            .write(toFile: otherConfig, atomically: true, encoding: .utf8)
        let second = try DaemonProcess(sandbox, arguments: ["--config", otherConfig])
        // Bounded: a second daemon that is not stopped runs until killed.
        let exited = eventually { !second.process.isRunning }
        #expect(exited, "the second daemon runs: \(second.log)")
        #expect(second.stop() == 1)
        #expect(
            second.log.contains("another rcagentd is running on \(sandbox.statePath)"),
            "\(second.log)")
        #expect(!FileManager.default.fileExists(atPath: otherSocket), "it never bound its socket")
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0, "the first daemon still answers")
        first.stop()
        let third = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0, "the lock went with the first")
        third.stop()
    }

    /// Root running the daemon on a state directory of another user (the package's, started by
    /// hand) leaves a lock file that user's and private: the service, run as that user, can take it
    /// later, and nobody else can take it to keep the daemon from starting.
    @Test func theLockFileIsTheStateDirectoryOwnersAndPrivate() throws {
        let sandbox = try Sandbox()
        try FileManager.default.createDirectory(atPath: sandbox.statePath, withIntermediateDirectories: true)
        try #require(chown(sandbox.statePath, 65_534, 65_534) == 0)
        try sandbox.publish(Sandbox.document(version: 1))
        let daemon = try sandbox.startDaemon()
        var info = stat()
        try #require(stat(sandbox.statePath + "/rcagentd.lock", &info) == 0)
        #expect(info.st_uid == 65_534 && info.st_gid == 65_534)
        #expect(info.st_mode & 0o777 == 0o600)
        daemon.stop()
    }

    @Test func globalConfigOptionMayComeBeforeTheCommand() throws {
        let sandbox = try Sandbox()
        let result = try sandbox.run("rcagent", ["--config", sandbox.configPath, "get", "greeting"])
        #expect(result.stdout == "hello\n", "\(result.stderr)")
        let equals = try sandbox.run("rcagent", ["--config=\(sandbox.configPath)", "get", "greeting"])
        #expect(equals.stdout == "hello\n")
    }

    @Test func commandsNeedARunningDaemon() throws {
        let sandbox = try Sandbox()
        for command in [["fetch"], ["activate"], ["notify", #"{"data":{"CONFIG_STATE":"STALE"}}"#], ["watch"]] {
            let result = try sandbox.run("rcagent", command + ["--config", sandbox.configPath])
            #expect(result.status == 69, "\(command)")
            #expect(result.stderr.contains("the daemon is not running"), "\(command)")
        }
    }

    /// The value set an activation pushed out of the history goes in the activation's own
    /// transaction, record and all: after each forced fetch the database holds the history's sets
    /// alone, and `get` reads the new values throughout.
    @Test func theSetsPushedOutOfTheHistoryGoWithTheActivation() throws {
        let sandbox = try Sandbox(extraConfig: "[Activation]\nHistory=2\n")
        let keys = 20
        try sandbox.publish(Sandbox.document(version: 1, keys: keys))
        let daemon = try sandbox.startServing()
        defer { _ = daemon.stop() }
        func stored() throws -> String {
            let result = try runProcess(
                "/usr/bin/sqlite3",
                ["-readonly", sandbox.databasePath, "SELECT count(*) || ' ' || sum(keys) FROM value_sets"])
            return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        for version in 2...6 {
            try sandbox.publish(Sandbox.document(version: version, keys: keys))
            #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
            #expect(try sandbox.cli("get", "key_3").stdout == "v\(version)\n")
            // Two history entries, their two sets (the fetched snapshot is the newest entry's),
            // once two fetches of this test's document are the history.
            let sets = try stored()
            if version > 2 { #expect(sets == "2 \(2 * keys)", "after version \(version)") }
        }
        #expect(try sandbox.cli("rollback").status == 0)
        #expect(try sandbox.cli("get", "key_3").stdout == "v5\n")
    }

    @Test func killNineDuringFetchLoopsLeavesAWholeSnapshot() throws {
        let sandbox = try Sandbox()
        let keys = 400
        // Rounds that found a whole remote snapshot: the test says nothing if no fetch ever landed.
        var whole = 0
        for round in 1...12 {
            try sandbox.publish(Sandbox.document(version: round, keys: keys))
            let daemon = try DaemonProcess(sandbox)
            try daemon.waitUntilReady()
            _ = try sandbox.cli("notify", #"{"data":{"CONFIG_STATE":"STALE"}}"#)
            // A random moment during the fetch to kill at: the randomness is the test, not a wait.
            usleep(UInt32.random(in: 0...15_000))
            daemon.killHard()

            let config = try AgentConfig.load(explicitPath: sandbox.configPath)
            let store = try #require(try StateStore.openForReading(path: config.databasePath))
            #expect(try store.integrityProblems() == nil)
            let values = try store.allValues(prefix: "key_").filter { $0.source == .remote }
            #expect(values.isEmpty || values.count == keys, "round \(round): \(values.count) keys")
            #expect(Set(values.map(\.text)).count <= 1, "round \(round): mixed snapshot \(Set(values.map(\.text)))")
            if values.count == keys { whole += 1 }
        }
        #expect(whole > 0, "no round found a fetched snapshot to check")
    }

    @Test func socketAbuseLeavesTheDaemonAnswering() throws {
        let sandbox = try Sandbox()
        try sandbox.publish(Sandbox.document(version: 1))
        let daemon = try sandbox.startDaemon()

        // Garbage bytes and bad requests get error responses on a connection that survives.
        let client = try SocketClient(path: sandbox.socketPath)
        let garbage = client.request("\u{1}\u{2}\u{ff}not json at all")
        #expect((garbage?["error"] as? [String: Any])?["code"] as? String == "bad-json")
        #expect((client.request(#"{"op":"explode"}"#)?["error"] as? [String: Any])?["code"] as? String == "unknown-op")
        #expect((client.request(#"[1,2,3]"#)?["error"] as? [String: Any])?["code"] as? String == "bad-request")
        #expect(client.request(#"{"op":"ping"}"#)?["ok"] as? Bool == true)

        // A line over 64 KiB is refused even when its newline arrives with it.
        let long = try SocketClient(path: sandbox.socketPath)
        long.write(#"{"op":"ping","pad":""# + String(repeating: "x", count: 75_000) + "\"}\n")
        #expect(long.readLine()?.contains("line-too-long") == true)

        // A 1 MiB line is refused and its connection closed.
        let big = try SocketClient(path: sandbox.socketPath)
        big.write([UInt8](repeating: UInt8(ascii: "a"), count: 1 << 20))
        let refusal = big.readLine()
        #expect(refusal?.contains("line-too-long") == true, "\(refusal ?? "nil")")

        // A client that asks for a lot and never reads.
        let deaf = try SocketClient(path: sandbox.socketPath)
        for _ in 0..<2_000 { deaf.write(#"{"op":"status"}"# + "\n") }

        // 200 connections at once: some may be told to come back later, none may break the daemon.
        var crowd: [SocketClient] = []
        for _ in 0..<200 { if let c = try? SocketClient(path: sandbox.socketPath) { crowd.append(c) } }
        for c in crowd { c.write(#"{"op":"ping"}"# + "\n") }
        var answered = 0
        for c in crowd where c.readLine(timeout: 10)?.contains(#""ok""#) == true { answered += 1 }
        #expect(answered == crowd.count, "every connection gets a response (ok or busy)")
        crowd.removeAll()

        // A new connection: the first one may have been idle past the daemon's 30 s idle timeout
        // by now (on a loaded machine the crowd above takes that long), and then it was closed.
        #expect(try SocketClient(path: sandbox.socketPath).request(#"{"op":"ping"}"#)?["ok"] as? Bool == true)
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        #expect(daemon.process.isRunning)
        #expect(daemon.stop() == 0)
    }
}

/// SO_PEERCRED: only root, the daemon's user or SocketGroup may change state.
@Suite struct PeerCredentialTests {
    @Test(.enabled(if: getuid() == 0, "needs root to run a client as another user"))
    func unprivilegedPeersMayReadButNotChangeState() throws {
        let sandbox = try Sandbox()
        try sandbox.publish(Sandbox.document(version: 1))
        // Let an outsider reach the socket at all; the daemon must still refuse its commands.
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: sandbox.root.path)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: sandbox.configPath)
        let daemon = try sandbox.startDaemon()
        chmod(sandbox.socketPath, 0o666)
        func asNobody(_ args: String...) throws -> ProcessResult {
            try sandbox.run(
                "/usr/bin/setpriv",
                ["--reuid=65534", "--regid=65534", "--clear-groups", Binaries.url("rcagent").path] + args + [
                    "--config", sandbox.configPath,
                ])
        }
        let status = try asNobody("status", "--json")
        #expect(status.stdout.contains(#""running":true"#), "\(status.stderr)")
        let fetch = try asNobody("fetch", "--force")
        #expect(fetch.status == 1)
        #expect(fetch.stderr.contains("uid 65534 may not change the agent's state"), "\(fetch.stderr)")
        #expect(try asNobody("notify", #"{"data":{"CONFIG_STATE":"STALE"}}"#).status == 1)
        #expect(try sandbox.cli("fetch", "--force").status == 0, "root may")

        // Without access to the socket at all, the CLI says so instead of "not running".
        chmod(sandbox.socketPath, 0o660)
        let denied = try asNobody("fetch")
        #expect(denied.status == 69)
        #expect(denied.stderr.contains("not allowed to talk to the daemon"), "\(denied.stderr)")
        let unreachable = try asNobody("status")
        #expect(unreachable.stdout.contains("running, but not reachable by this user"), "\(unreachable.stdout)")
        daemon.stop()
    }
}

/// The daemon as the package installs it: no source yet.
@Suite struct UnconfiguredDaemonTests {
    @Test func servesDefaultsAndRefusesFetchesWithoutRecordingFailures() throws {
        let sandbox = try Sandbox()
        try sandbox.writeConfig(extra: "[Source]\nPath=")
        let daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("get", "greeting").stdout == "hello\n")
        let fetch = try sandbox.cli("fetch", "--force", "--wait")
        #expect(fetch.status == 1)
        #expect(fetch.stderr.contains("no source configured"))
        let status = try sandbox.cli("status", "--json").stdout
        #expect(status.contains(#""lastFetch":{"attemptAt":null"#), "\(status)")
        #expect(daemon.log.contains("<4>Serving the cache and defaults only"))
        #expect(daemon.stop() == 0)
    }
}

/// Template documents through the file source, with conditions evaluated on the device.
@Suite struct TemplateSourceTests {
    @Test func conditionsUseTheDeviceSignalsAndUnsupportedOnesAreReportedOnce() throws {
        let sandbox = try Sandbox(extraConfig: "[Signals]\nstore=berlin-12")
        let template = #"""
            {
              "conditions": [
                {"name": "legacy", "expression": "app.version.>=(['2.0'])"},
                {"name": "berlin", "condition": {"customSignal": {"customSignalOperator": "STRING_EXACTLY_MATCHES",
                  "customSignalKey": "store", "targetCustomSignalValues": ["berlin-12"]}}},
                {"name": "everyone", "condition": {"true": {}}}
              ],
              "parameters": {
                "greeting": {"defaultValue": {"value": "hello"},
                             "conditionalValues": {"berlin": {"value": "hallo"}, "legacy": {"value": "old"}}},
                "banner": {"defaultValue": {"value": "none"}, "conditionalValues": {"everyone": {"useInAppDefault": true}}},
                "plain": {"defaultValue": {"value": "p"}}
              },
              "version": {"versionNumber": "12"}
            }
            """#
        try sandbox.publish(template)
        let daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        #expect(try sandbox.cli("get", "greeting").stdout == "hallo\n")
        #expect(try sandbox.cli("get", "plain").stdout == "p\n")
        #expect(
            try sandbox.cli("get", "banner").status == 1, "useInAppDefault leaves the key to the defaults (none here)")
        #expect(try sandbox.cli("status", "--json").stdout.contains(#""templateVersion":"12""#))
        // The same template again (a new version) does not repeat the report.
        try sandbox.publish(template.replacingOccurrences(of: #""12""#, with: #""13""#))
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        let reports = daemon.log.components(separatedBy: "cannot evaluate condition(s) legacy").count - 1
        #expect(reports == 1, "\(daemon.log)")
        #expect(daemon.stop() == 0)

        // Other signals, same document: the values are evaluated again.
        try sandbox.writeConfig(extra: "[Signals]\nstore=hamburg-3")
        let restarted = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        #expect(try sandbox.cli("get", "greeting").stdout == "hello\n", "\(restarted.log)")
        restarted.stop()
    }

    @Test func aFetchResponseThatMentionsTheWordsIsNotATemplate() throws {
        let sandbox = try Sandbox()
        try sandbox.publish(#"{"state": "UPDATE", "entries": {"note": "\"conditions\" and \"parameters\" are words"}}"#)
        let daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0, "\(daemon.log)")
        #expect(try sandbox.cli("get", "note").stdout == "\"conditions\" and \"parameters\" are words\n")
        daemon.stop()
    }
}
