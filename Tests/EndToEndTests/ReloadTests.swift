import Foundation
import Glibc
import TestSupport
import Testing

/// Config reload end to end (SIGHUP, `rcagent reload`): the running rcagentd re-reads agent.conf,
/// its drop-ins and the defaults, swaps the services the change touches, and keeps everything
/// as it was when the new config does not load.
@Suite struct ReloadTests {
    /// Writes `text` as drop-in `name` beside the sandbox's agent.conf.
    func dropIn(_ sandbox: Sandbox, _ name: String, _ text: String) throws {
        let directory = sandbox.configPath + ".d"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try sandbox.write(text, to: directory + "/" + name)
    }

    @Test func aReloadSwitchesTheSourceFromFileToHTTPAndFetchesAtOnce() throws {
        let sandbox = try Sandbox()
        let daemon = try sandbox.startServing(version: 1)
        let server = try ConfigServer(in: sandbox)
        try server.serve(Sandbox.document(version: 2), etag: #""v2""#)
        try dropIn(sandbox, "10-http.conf", "[Source]\nType=http\nURL=\(server.url)\n")

        let reload = try sandbox.cli("reload")
        #expect(reload.status == 0, "\(reload.stderr)\(daemon.log)")
        #expect(reload.stdout.contains("Source.Type"), "\(reload.stdout)")
        // No `fetch`: the new source is asked at once, for a whole document (no If-None-Match).
        #expect(try eventually { try sandbox.cli("get", "key_0").stdout == "v2\n" }, "\(daemon.log)")
        #expect(server.requests.first?["if-none-match"] == nil, "\(server.requests)")
        #expect(try sandbox.cli("status").stdout.contains("http"))
        #expect(daemon.log.contains("Reloaded the config: Source.Type, Source.URL"), "\(daemon.log)")
        #expect(daemon.stop() == 0)
    }

    @Test func aBadDropInLeavesTheRunningSourceServing() throws {
        let sandbox = try Sandbox()
        let daemon = try sandbox.startServing(version: 1)
        try dropIn(sandbox, "20-bad.conf", "[Agent]\nMinimumFetchInterval=banana\n")

        let reload = try sandbox.cli("reload")
        #expect(reload.status == 1)
        #expect(
            reload.stderr.contains("agent.conf.d/20-bad.conf:2: MinimumFetchInterval= 'banana' is not a duration"),
            "\(reload.stderr)")
        // SIGHUP (systemctl reload) with the same bad file: logged, nothing else happens.
        kill(daemon.process.processIdentifier, SIGHUP)
        // (The CLI reads the same files first, to find the socket, and reports them without asking.)
        #expect(eventually { daemon.log.contains("Failed to reload the config") }, "\(daemon.log)")

        // The file source and its watch still run: a new document is fetched without asking.
        let watcher = try SocketClient(path: sandbox.socketPath)
        #expect(watcher.watch())
        try sandbox.publish(Sandbox.document(version: 2))
        #expect(watcher.event { $0["event"] as? String == "activated" } != nil, "\(daemon.log)")
        // `get` reads what the daemon stored meanwhile, past the bad line (with a warning).
        let get = try sandbox.cli("get", "key_0")
        #expect(get.stdout == "v2\n" && get.stderr.contains("20-bad.conf:2:"), "\(get.stderr)")
        #expect(daemon.stop() == 0)
    }

    /// The first-day trap: a source added in a drop-in while the daemon runs unconfigured. The
    /// refused fetch says to reload, `doctor` says the daemon runs another config, and the reload
    /// makes it serve.
    @Test func aSourceAddedInADropInServesAfterAReload() throws {
        let sandbox = try Sandbox(extraConfig: "Path=")
        try sandbox.publish(Sandbox.document(version: 4))
        let daemon = try sandbox.startDaemon()
        let refused = try sandbox.cli("fetch", "--wait")
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("no source configured"), "\(refused.stderr)")
        #expect(refused.stderr.contains("rcagent reload"), "\(refused.stderr)")
        #expect(try sandbox.cli("doctor").stdout.contains("running (pid"))

        try dropIn(sandbox, "10-source.conf", "[Source]\nPath=\(sandbox.remotePath)\n")
        let doctor = try sandbox.cli("doctor")
        #expect(doctor.stdout.contains("another config than the files say: run `rcagent reload`"), "\(doctor.stdout)")

        #expect(try sandbox.cli("reload").stdout == "reloaded: Source.Path changed\n")
        #expect(try eventually { try sandbox.cli("get", "key_0").stdout == "v4\n" }, "\(daemon.log)")
        #expect(try sandbox.cli("doctor").status == 0)
        #expect(daemon.stop() == 0)
    }

    @Test func aReloadSwitchesThePushChannel() throws {
        let (sandbox, server, broker) = try MQTTTests().setUp()
        let daemon = try MQTTTests().startConnected(sandbox, server)
        try dropIn(sandbox, "10-topic.conf", "[Push]\nMQTTTopic=FLEET_B\n")
        #expect(try sandbox.cli("reload").stdout == "reloaded: Push.MQTTTopic changed\n")
        // The new channel subscribed to the new topic (the old one stopped first).
        #expect(eventually { daemon.log.contains("subscribed to FLEET_B, FLEET_B/") }, "\(daemon.log)")

        try expectOnlyTheNewTopicHeard(sandbox, server, broker, daemon)
        #expect(try eventually { try sandbox.cli("get", "key_0").stdout == "v2\n" }, "\(daemon.log)")
        #expect(daemon.stop() == 0)
    }

    /// A ping on the old topic (PUSH_RC) is no longer heard; one on the new topic (FLEET_B) is: the
    /// first stale flag set names FLEET_B. Serves template 2 for the fetch the ping starts.
    func expectOnlyTheNewTopicHeard(
        _ sandbox: Sandbox, _ server: ConfigServer, _ broker: MosquittoBroker, _ daemon: DaemonProcess
    ) throws {
        let watcher = try SocketClient(path: sandbox.socketPath)
        #expect(watcher.watch())
        try server.serve(Sandbox.document(version: 2), etag: #""v2""#)
        try broker.publish(MQTTTests.ping, topic: "PUSH_RC")
        try broker.publish(MQTTTests.ping, topic: "FLEET_B")
        let stale = watcher.event { $0["event"] as? String == "stale-set" }
        #expect(
            (stale?["reason"] as? String)?.contains("FLEET_B") == true, "\(String(describing: stale))\n\(daemon.log)")
    }

    /// New signals evaluate the same template again: after SIGHUP, as `systemctl reload` sends it.
    @Test func changedSignalsEvaluateTheTemplateAgain() throws {
        let sandbox = try Sandbox(extraConfig: "[Signals]\nstore=berlin-12")
        try sandbox.publish(
            #"""
            {
              "conditions": [
                {"name": "berlin", "condition": {"customSignal": {"customSignalOperator": "STRING_EXACTLY_MATCHES",
                  "customSignalKey": "store", "targetCustomSignalValues": ["berlin-12"]}}}
              ],
              "parameters": {
                "greeting": {"defaultValue": {"value": "hello"}, "conditionalValues": {"berlin": {"value": "hallo"}}}
              },
              "version": {"versionNumber": "12"}
            }
            """#)
        let daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--wait").status == 0)
        #expect(try sandbox.cli("get", "greeting").stdout == "hallo\n")

        try sandbox.writeConfig(extra: "[Signals]\nstore=hamburg-3")
        kill(daemon.process.processIdentifier, SIGHUP)
        // systemd hears the reload start and end (RELOADING=1 with its time, then READY=1).
        let told = daemon.notify.messages(until: { $0.contains("READY=1") })
        #expect(told.contains { $0.contains("RELOADING=1") && $0.contains("MONOTONIC_USEC=") }, "\(told)")
        #expect(told.last?.contains("READY=1") == true, "\(told)")
        #expect(try eventually { try sandbox.cli("get", "greeting").stdout == "hello\n" }, "\(daemon.log)")
        #expect(daemon.log.contains("Reloaded the config: Signals.store"), "\(daemon.log)")
        #expect(daemon.stop() == 0)
    }

    @Test func aReloadSaysWhichSettingsWaitForARestart() throws {
        let sandbox = try Sandbox()
        let daemon = try sandbox.startServing(version: 1)
        try dropIn(sandbox, "10-state.conf", "[Agent]\nMinimumFetchInterval=1h\nStateDirectory=/var/tmp/elsewhere\n")
        let reload = try sandbox.cli("reload", "--json")
        #expect(reload.status == 0, "\(reload.stderr)")
        let json = try JSONSerialization.jsonObject(with: Data(reload.stdout.utf8)) as? [String: Any]
        #expect(json?["changed"] as? [String] == ["Agent.StateDirectory", "Agent.MinimumFetchInterval"])
        #expect(json?["restartNeeded"] as? [String] == ["Agent.StateDirectory"])
        // The daemon goes on with the state it has open.
        #expect(daemon.log.contains("Agent.StateDirectory changed: it applies when the daemon is restarted"))
        #expect(!FileManager.default.fileExists(atPath: "/var/tmp/elsewhere"))
        #expect(daemon.stop() == 0)
    }
}

extension ReloadTests {
    /// Regression (failed until the fix): after a reload that changes a restart-only setting,
    /// the daemon reported the digest of the files, not of the config it runs, so `doctor` passed
    /// while the daemon wrote one StateDirectory and `rcagent get` read another.
    @Test func doctorFailsWhileARestartOnlySettingWaitsForARestart() throws {
        let sandbox = try Sandbox()
        let daemon = try sandbox.startServing(version: 1)
        let elsewhere = sandbox.root.appendingPathComponent("elsewhere").path
        try dropIn(sandbox, "10-state.conf", "[Agent]\nStateDirectory=\(elsewhere)\n")
        let reload = try sandbox.cli("reload")
        #expect(reload.status == 0, "\(reload.stderr)")
        #expect(reload.stdout.contains("Agent.StateDirectory"), "\(reload.stdout)")
        // The daemon still serves the old state; the CLI, reading the files, looks elsewhere.
        #expect(try sandbox.cli("get", "key_0").stdout != "v1\n")
        let doctor = try sandbox.cli("doctor")
        #expect(doctor.status == 1, "\(doctor.stdout)")
        #expect(doctor.stdout.contains("restart"), "\(doctor.stdout)")
        #expect(daemon.stop() == 0)
    }
}

extension ReloadTests {
    /// `reload` changes state: a peer that may only read (here: nobody, let through by a socket
    /// opened to everyone) is refused, and the daemon goes on with the config it has. (A guard:
    /// this passes.)
    @Test(.enabled(if: getuid() == 0, "needs root: runs the CLI as another user"))
    func aReloadFromAPeerThatMayNotChangeStateIsRefused() throws {
        let sandbox = try Sandbox()
        let daemon = try sandbox.startServing(version: 1)
        #expect(chmod(sandbox.socketPath, 0o666) == 0)
        chmod(sandbox.root.path, 0o755)
        try dropIn(sandbox, "10-interval.conf", "[Agent]\nMinimumFetchInterval=1h\n")
        let refused = try runProcess(
            "/usr/bin/setpriv",
            [
                "--reuid", "65534", "--regid", "65534", "--clear-groups", Binaries.url("rcagent").path, "reload",
                "--config", sandbox.configPath,
            ])
        #expect(refused.status != 0, "\(refused.stdout)")
        #expect(refused.stderr.contains("may not change the agent's state"), "\(refused.stderr)")
        #expect(!daemon.log.contains("Reloading the config"), "\(daemon.log)")
        #expect(try sandbox.cli("reload").stdout == "reloaded: Agent.MinimumFetchInterval changed\n")
        #expect(daemon.stop() == 0)
    }
}

extension ReloadTests {
    /// A reload that lands while a fetch hangs: it answers at once (the agent is not held by the
    /// transfer), the hung round ends by its FetchTimeout, and the new source serves right after.
    /// (A guard: this passes.)
    @Test func aReloadDuringAHungFetchAnswersAtOnceAndTheNewSourceServes() throws {
        let sandbox = try Sandbox()
        let server = try ConfigServer(in: sandbox)
        try server.setMode(["kind": "hang"])
        try sandbox.writeConfig(extra: "[Source]\nType=http\nURL=\(server.url)\n[Agent]\nFetchTimeout=8s\n")
        let daemon = try sandbox.startDaemon()
        #expect(eventually { !server.requests.isEmpty }, "the start-up fetch is under way: \(daemon.log)")

        try sandbox.publish(Sandbox.document(version: 3))
        try dropIn(sandbox, "10-file.conf", "[Source]\nType=file\nPath=\(sandbox.remotePath)\n")
        let clock = ContinuousClock()
        let started = clock.now
        let reload = try sandbox.cli("reload")
        #expect(reload.status == 0, "\(reload.stderr)")
        #expect(clock.now - started < .seconds(5), "the reload waited for the hung transfer")
        #expect(try eventually(20) { try sandbox.cli("get", "key_0").stdout == "v3\n" }, "\(daemon.log)")
        #expect(daemon.stop() == 0)
    }
}
