import Foundation
import Glibc
import TestSupport
import Testing

/// `rcadmin relay` between the fake Firebase backend's realtime stream and a real mosquitto: one
/// stale ping per published template version, across relay restarts and broker restarts.
@Suite struct RelayTests {
    /// A subscriber to the ping topic (mosquitto_sub, a persistent session: what the broker queued
    /// while it was away arrives when it reconnects), its messages one per line in a file.
    final class Subscriber {
        let process = Process()
        let output: String

        init(_ broker: MosquittoBroker, in sandbox: Sandbox, topic: String = "PUSH_RC") throws {
            output = sandbox.root.appendingPathComponent("pings").path
            try #require(FileManager.default.createFile(atPath: output, contents: nil))
            let session = [
                "-h", "127.0.0.1", "-p", String(broker.port), "-t", topic, "-q", "1", "-c", "-i", "relay-test",
            ]
            // The session and its subscription first (-E: exit once the broker acknowledged it): from
            // then on the broker keeps every ping for this client, whenever the reader below connects.
            let subscribed = try runProcess("/usr/bin/mosquitto_sub", session + ["-E"])
            guard subscribed.status == 0 else { throw DaemonError("mosquitto_sub -E: \(subscribed.stderr)") }
            process.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_sub")
            process.arguments = session
            process.standardOutput = FileHandle(forWritingAtPath: output)
            try process.run()
        }

        var pings: [String] {
            ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }

        deinit {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    static func ping(_ version: Int) -> String { #"{"data":{"CONFIG_STATE":"STALE","templateVersion":"\#(version)"}}"# }

    /// The relay's config in the sandbox, pinging the broker on `mqttPort`; its path.
    func relayConfig(
        _ sandbox: Sandbox, _ server: FirebaseServer, mqttPort: Int, project: String = "demo-project",
        extra: String = ""
    ) throws -> String {
        let path = sandbox.root.appendingPathComponent("relay.conf").path
        try """
        \(server.sourceSection(project: project))
        [Push]
        MQTT=mqtt://127.0.0.1:\(mqttPort)
        [Agent]
        StateDirectory=\(sandbox.root.path)/relay-state
        \(extra)
        """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// `rcadmin relay --config config`, once it says READY=1. `account`: the service account its
    /// FCM target uses (GOOGLE_APPLICATION_CREDENTIALS).
    func startRelay(_ sandbox: Sandbox, config: String, account: TestServiceAccount? = nil) throws -> DaemonProcess {
        let relay = try DaemonProcess(
            sandbox, arguments: ["relay", "--config", config],
            environment: account.map { ["GOOGLE_APPLICATION_CREDENTIALS": $0.keyFilePath] } ?? [:],
            executable: "rcadmin")
        try relay.waitUntilReady()
        return relay
    }

    /// Publishes `version` and announces it on the open realtime streams, as Firebase does.
    func publish(_ server: FirebaseServer, _ version: Int) throws {
        try server.publish(version: version, entries: ["key_0": "v\(version)"])
        try server.push(["latestTemplateVersionNumber": String(version)])
    }

    @Test func eachVersionIsPingedOnceAcrossRelayAndBrokerRestarts() throws {
        let sandbox = try Sandbox()
        let server = try FirebaseServer(in: sandbox)
        let broker = try MosquittoBroker(in: sandbox, persistent: true)
        let subscriber = try Subscriber(broker, in: sandbox)
        let config = try relayConfig(sandbox, server, mqttPort: broker.port)
        try server.publish(version: 1, entries: ["key_0": "v1"])

        // First start: nothing relayed yet, so the current version is pinged once.
        var relay = try startRelay(sandbox, config: config)
        #expect(eventually { subscriber.pings == [Self.ping(1)] }, "\(subscriber.pings)\n\(relay.log)")
        try publish(server, 2)
        #expect(eventually { subscriber.pings == [Self.ping(1), Self.ping(2)] }, "\(subscriber.pings)\n\(relay.log)")

        // A restart pings nothing again: the stream opens knowing version 2 (the ledger).
        #expect(relay.stop() == 0, "\(relay.log)")
        let streams = server.requests(api: "realtime").count
        relay = try startRelay(sandbox, config: config)
        #expect(eventually { server.requests(api: "realtime").count > streams }, "\(relay.log)")
        #expect(
            (server.requests(api: "realtime").last?["body"] as? [String: Any])?["lastKnownVersionNumber"] as? String
                == "2")
        try publish(server, 3)
        #expect(eventually { subscriber.pings.count == 3 }, "\(subscriber.pings)\n\(relay.log)")

        // The broker goes away: the ping for version 4 is retried until it is back, then sent once.
        broker.stop()
        try publish(server, 4)
        #expect(eventually { relay.log.contains("Failed to relay template version 4") }, "\(relay.log)")
        try broker.start()
        #expect(eventually(30) { subscriber.pings.count == 4 }, "\(subscriber.pings)\n\(relay.log)")
        #expect(subscriber.pings == (1...4).map(Self.ping), "\(subscriber.pings)")
        #expect(relay.stop() == 0, "\(relay.log)")
    }

    /// A state directory the relay cannot write showed only after its first ping, whose record
    /// was then lost: every restart pinged the fleet again. It is an error at start instead, before
    /// any ping. (/proc takes no new files, not even from root, which the tests may run as.)
    @Test func aStateDirectoryItCannotWriteStopsItBeforeAnyPing() throws {
        let sandbox = try Sandbox()
        let server = try FirebaseServer(in: sandbox)
        let broker = try MosquittoBroker(in: sandbox)
        let subscriber = try Subscriber(broker, in: sandbox)
        try server.publish(version: 1, entries: ["key_0": "v1"])
        let config = try relayConfig(sandbox, server, mqttPort: broker.port)
        let text = try String(contentsOfFile: config, encoding: .utf8).replacingOccurrences(
            of: "StateDirectory=\(sandbox.root.path)/relay-state", with: "StateDirectory=/proc")
        try text.write(toFile: config, atomically: true, encoding: .utf8)
        let relay = try DaemonProcess(sandbox, arguments: ["relay", "--config", config], executable: "rcadmin")
        #expect(eventually { !relay.process.isRunning }, "the relay kept running: \(relay.log)")
        #expect(relay.stop() == 1)
        #expect(relay.log.contains("Error: cannot write the ledger of relayed versions in /proc"), "\(relay.log)")
        #expect(server.requests(api: "realtime").isEmpty)
        #expect(subscriber.pings.isEmpty)
    }

    /// SIGTERM while a ping waits for a broker that took the connection and never answers: the
    /// MQTT client would wait out its 30 s for the acknowledgement, which no cancellation reaches.
    /// The relay stops within its grace period instead; the ping, never recorded, goes at the next start.
    @Test func aStopDoesNotWaitForABrokerThatNeverAnswers() throws {
        let sandbox = try Sandbox()
        let server = try FirebaseServer(in: sandbox)
        try server.publish(version: 1, entries: ["key_0": "v1"])
        // A listening socket nobody accepts on: the kernel completes the connection, nothing answers.
        let listener = try SilentListener()
        let port = listener.port
        let path = try relayConfig(sandbox, server, mqttPort: port)
        let relay = try startRelay(sandbox, config: path)
        // The ping for version 1 has connected: a connection waits in the listener's queue.
        #expect(
            eventually { listener.hasWaitingConnection }, "\(relay.log)")
        let signalled = ContinuousClock.now
        #expect(relay.stop() == 0, "\(relay.log)")
        #expect(ContinuousClock.now - signalled < .seconds(15), "\(relay.log)")
        #expect(relay.log.contains("Stopping with a ping still in flight"), "\(relay.log)")
    }

    /// Targets are independent: with the broker unreachable for as long as it takes, the FCM ping
    /// still goes out at once (the MQTT target's retries held every later target back).
    @Test func aBrokerThatIsDownDoesNotHoldBackTheFCMPing() throws {
        let fixture = try AdminTests.Fixture()
        let (sandbox, server) = (fixture.sandbox, fixture.server)
        let path = try relayConfig(
            sandbox, server, mqttPort: try Mosquitto.freePort(), project: AdminTests.project,
            extra: "[Relay]\nFCMTopic=PUSH_RC")
        let relay = try startRelay(sandbox, config: path, account: fixture.account)
        defer { relay.stop() }
        #expect(eventually { relay.log.contains("Relayed template version 1 to fcm PUSH_RC") }, "\(relay.log)")
        #expect(relay.log.contains("Failed to relay template version 1 to mqtt"), "\(relay.log)")
        #expect(!relay.log.contains("Relayed template version 1 to mqtt"), "\(relay.log)")
    }

    @Test func aConfigWithoutAFirebaseProjectOrATargetIsRefused() throws {
        let sandbox = try Sandbox()
        let file = sandbox.root.appendingPathComponent("relay.conf").path
        try "[Source]\nType=file\nPath=/dev/null\n[Push]\nMQTT=mqtt://127.0.0.1:1\n".write(
            toFile: file, atomically: true, encoding: .utf8)
        let notFirebase = try sandbox.run("rcadmin", ["relay", "--config", file])
        #expect(notFirebase.status == 1)
        #expect(notFirebase.stderr.contains("[Source] Type=firebase"), "\(notFirebase.stderr)")

        try "[Source]\nType=firebase\nProjectId=p\nAppId=a\nAPIKey=k\n".write(
            toFile: file, atomically: true, encoding: .utf8)
        let nowhere = try sandbox.run("rcadmin", ["relay", "--config", file])
        #expect(nowhere.status == 1)
        #expect(nowhere.stderr.contains("nowhere to ping"), "\(nowhere.stderr)")
        #expect(try sandbox.run("rcadmin", ["relay"]).status == 64)
    }

    /// The issue's whole path: `rcadmin set-update` publishes, the relay hears it on the realtime
    /// stream and pings the MQTT topic, a daemon that only listens to MQTT (no realtime stream of
    /// its own, no Firebase credentials needed for the ping) fetches, and `check-update` exits 101.
    /// With [Relay] FCMTopic= the same ping goes to FCM.
    @Test func setUpdateReachesADeviceThroughTheRelay() throws {
        let fixture = try AdminTests.Fixture()
        let (sandbox, server) = (fixture.sandbox, fixture.server)
        let broker = try MosquittoBroker(in: sandbox)
        try sandbox.writeConfig(
            extra: """
                \(server.sourceSection(project: AdminTests.project))
                [App]
                Version=1.4.0
                [Push]
                Realtime=no
                MQTT=mqtt://127.0.0.1:\(broker.port)
                Jitter=0
                """)
        let daemon = try sandbox.startDaemon()
        defer { daemon.stop() }
        #expect(eventually { daemon.log.contains("MQTT connected") }, "\(daemon.log)")
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0, "\(daemon.log)")
        #expect(try sandbox.cli("check-update").status == 0, "the seeded required version 1.0.0 is older")

        let config = try relayConfig(
            sandbox, server, mqttPort: broker.port, project: AdminTests.project, extra: "[Relay]\nFCMTopic=PUSH_RC")
        let relay = try startRelay(sandbox, config: config, account: fixture.account)
        defer { relay.stop() }
        // The seeded version 1 is relayed first (the relay has never relayed anything): wait for it,
        // so the publish below is the next announcement.
        #expect(eventually { relay.log.contains("Relayed template version 1 to fcm PUSH_RC") }, "\(relay.log)")

        let watcher = try SocketClient(path: sandbox.socketPath)
        #expect(watcher.watch())
        let set = try fixture.rcadmin([
            "set-update", "--required", "--platform", "linux", "--version", "1.5.0", "--download",
            "https://dl.example/app_1.5.0.deb",
        ])
        #expect(set.status == 0, "\(set.stderr)")
        let activated = watcher.event(timeout: 20) {
            $0["event"] as? String == "activated" && $0["templateVersion"] as? String == "2"
        }
        #expect(activated != nil, "\(relay.log)\n\(daemon.log)")
        #expect(
            daemon.log.contains("Config marked stale: mqtt PUSH_RC: CONFIG_STATE=STALE, template 2"),
            "the fetch followed the relay's ping: \(daemon.log)")
        let after = try sandbox.cli("check-update")
        #expect(after.status == 101, "\(after.stdout)\(after.stderr)")
        #expect(
            eventually {
                server.fcmMessages.compactMap { ($0["message"] as? [String: Any])?["data"] as? [String: String] }
                    == [1, 2].map { ["CONFIG_STATE": "STALE", "templateVersion": String($0)] }
            }, "\(server.fcmMessages)")
    }
}
