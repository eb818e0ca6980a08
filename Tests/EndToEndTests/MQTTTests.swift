import Foundation
import Glibc
import TestSupport
import Testing

/// The MQTT suites' broker: TestSupport's real mosquitto, in the sandbox.
typealias MosquittoBroker = Mosquitto

extension Mosquitto {
    /// `tls`: the listener takes TLS with the test PKI's server certificate. `persistent`: the broker
    /// keeps its sessions across a restart, as production brokers do (saved every second: started
    /// from the test runner it inherits a blocked SIGTERM, so it cannot save on the way out).
    /// `extra`: more `mosquitto.conf` lines (client certificates, an ACL).
    convenience init(in sandbox: Sandbox, tls: TestPKI? = nil, persistent: Bool = false, extra: String = "") throws {
        let directory = sandbox.root.appendingPathComponent(persistent ? "persistent-broker" : "broker")
        var settings = ""
        if let tls {
            settings += "cafile \(tls.caCertificate)\ncertfile \(tls.serverCertificate)\nkeyfile \(tls.serverKey)\n"
        }
        if persistent {
            settings += "persistence true\npersistence_location \(directory.path)/\nautosave_interval 1\n"
        }
        try self.init(in: directory, settings: settings + extra)
    }

    /// Whether a persistent broker saved its sessions after `date` (and so holds what was subscribed then).
    func saved(after date: Date) -> Bool {
        let path = directory.appendingPathComponent("mosquitto.db").path
        let modified = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
        return modified.map { $0 > date } ?? false
    }
}

/// The MQTT push channel against a real broker: the fleet counterpart of the FCM topic.
@Suite struct MQTTTests {
    /// Serves template 1, starts the daemon and waits until it is connected to the broker and serves it.
    func startConnected(_ sandbox: Sandbox, _ server: ConfigServer) throws -> DaemonProcess {
        try server.serve(Sandbox.document(version: 1), etag: "\"v1\"")
        let daemon = try sandbox.startDaemon()
        #expect(eventually { daemon.log.contains("MQTT connected") }, "\(daemon.log)")
        #expect(try eventually { try sandbox.cli("get", "key_0").stdout == "v1\n" })
        return daemon
    }

    /// `persistent`: the broker keeps sessions across its restarts (see ``Mosquitto/init(in:tls:persistent:)``).
    func setUp(jitter: String = "0", persistent: Bool = false) throws -> (Sandbox, ConfigServer, MosquittoBroker) {
        let sandbox = try Sandbox()
        let server = try ConfigServer(in: sandbox)
        let broker = try MosquittoBroker(in: sandbox, persistent: persistent)
        try sandbox.writeConfig(
            extra: """
                [Source]
                Type=http
                URL=\(server.url)
                [Push]
                MQTT=mqtt://127.0.0.1:\(broker.port)
                Jitter=\(jitter)
                """)
        return (sandbox, server, broker)
    }

    static let ping = #"{"data":{"CONFIG_STATE":"STALE"}}"#

    @Test func aPingFetchesTheNewConfig() throws {
        let (sandbox, server, broker) = try setUp()
        let daemon = try startConnected(sandbox, server)
        // The push state is updated right after the connect is logged.
        #expect(
            try eventually {
                try sandbox.cli("status").stdout.contains("push:         mqtt 127.0.0.1:\(broker.port) connected")
            })

        let watcher = try SocketClient(path: sandbox.socketPath)
        #expect(watcher.watch())
        try server.serve(Sandbox.document(version: 2), etag: "\"v2\"")
        try broker.publish(Self.ping)
        let activated = watcher.event {
            $0["event"] as? String == "activated" && $0["templateVersion"] as? String == "2"
        }
        #expect(activated != nil, "\(daemon.log)")
        #expect(daemon.log.contains("Config marked stale: mqtt PUSH_RC: CONFIG_STATE=STALE"))
        daemon.stop()
    }

    @Test func aPingSentWhileTheAgentIsDownArrivesOnReconnect() throws {
        let (sandbox, server, broker) = try setUp()
        try server.serve(Sandbox.document(version: 1))
        var daemon = try sandbox.startDaemon()
        #expect(eventually { daemon.log.contains("MQTT connected") })
        let status =
            try JSONSerialization.jsonObject(with: Data(try sandbox.cli("status", "--json").stdout.utf8))
            as? [String: Any]
        let deviceId = try #require(status?["deviceId"] as? String)
        #expect(daemon.stop() == 0)

        // Queued by the broker for the persistent session (QoS 1, clean session off).
        try broker.publish(#"{"data":{"CONFIG_STATE":"STALE","templateVersion":"99"}}"#, topic: "PUSH_RC/\(deviceId)")
        daemon = try sandbox.startDaemon()
        #expect(
            eventually {
                daemon.log.contains("Config marked stale: mqtt PUSH_RC/\(deviceId): CONFIG_STATE=STALE, template 99")
            }, "\(daemon.log)")
        daemon.stop()
    }

    @Test func aBrokerRestartReconnectsAndRefetches() throws {
        let (sandbox, server, broker) = try setUp()
        let daemon = try startConnected(sandbox, server)
        // Published while the broker is down: no ping can announce it, only the refetch after the reconnect.
        // `status` follows the connection in order: connected, then lost, then connected again.
        func push() throws -> String {
            try sandbox.cli("status").stdout.split(separator: "\n").first { $0.hasPrefix("push:") }.map(String.init)
                ?? ""
        }
        #expect(
            try eventually {
                try push().hasSuffix("connected, topics PUSH_RC, PUSH_RC/\(FirebaseSourceTests().deviceId(sandbox))")
            })
        broker.stop()
        #expect(eventually { daemon.log.contains("MQTT connection to 127.0.0.1:\(broker.port) lost") }, "\(daemon.log)")
        #expect(try eventually { try push().hasSuffix("disconnected, reconnecting") }, "\((try? push()) ?? "")")
        try server.serve(Sandbox.document(version: 2), etag: "\"v2\"")
        try broker.start()
        #expect(try eventually(20) { try sandbox.cli("get", "key_0").stdout == "v2\n" }, "\(daemon.log)")
        #expect(try eventually { try push().contains(" connected, topics ") }, "\((try? push()) ?? "")")
        daemon.stop()
    }

    @Test func rcadminPublishesTheStalePing() throws {
        let (sandbox, server, broker) = try setUp()
        let daemon = try startConnected(sandbox, server)
        try server.serve(Sandbox.document(version: 2), etag: "\"v2\"")
        let published = try sandbox.run(
            "rcadmin", ["notify-stale", "--mqtt", "mqtt://127.0.0.1:\(broker.port)", "--template-version", "2"])
        #expect(published.status == 0, "\(published.stderr)")
        #expect(
            published.stdout == #"published {"data":{"CONFIG_STATE":"STALE","templateVersion":"2"}} to PUSH_RC"# + "\n")
        #expect(try eventually { try sandbox.cli("get", "key_0").stdout == "v2\n" }, "\(daemon.log)")
        // The same version again is at or below the current one: acknowledged and ignored.
        #expect(
            try sandbox.run(
                "rcadmin", ["notify-stale", "--mqtt", "mqtt://127.0.0.1:\(broker.port)", "--template-version", "2"]
            ).status == 0)
        #expect(
            eventually { daemon.log.contains("Ignoring a stale ping from mqtt PUSH_RC for template 2") },
            "\(daemon.log)")

        #expect(try sandbox.run("rcadmin", ["notify-stale"]).status == 64)
        #expect(
            try sandbox.run("rcadmin", ["notify-stale", "--mqtt", "mqtt://h", "--template-version", "x"]).status == 64)
        let unreachable = try sandbox.run(
            "rcadmin", ["notify-stale", "--mqtt", "mqtt://127.0.0.1:\(try MosquittoBroker.freePort())"])
        #expect(unreachable.status == 69, "a broker that cannot be reached is \"unavailable\"")
        #expect(unreachable.stderr.contains("cannot connect"))
        daemon.stop()
    }

    @Test func tlsWithATestCA() throws {
        let sandbox = try Sandbox()
        let pki = try TestPKI(in: sandbox.root)
        let server = try ConfigServer(in: sandbox)
        let broker = try MosquittoBroker(in: sandbox, tls: pki)
        try sandbox.writeConfig(
            extra: """
                [Source]
                Type=http
                URL=\(server.url)
                [Push]
                MQTT=mqtts://127.0.0.1:\(broker.port)
                MQTTCAFile=\(pki.caCertificate)
                Jitter=0
                """)
        try server.serve(Sandbox.document(version: 1), etag: "\"v1\"")
        let daemon = try sandbox.startDaemon()
        #expect(eventually { daemon.log.contains("MQTT connected") }, "\(daemon.log)")
        try server.serve(Sandbox.document(version: 2), etag: "\"v2\"")
        let publish = Process()
        publish.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_pub")
        publish.arguments = [
            "-h", "127.0.0.1", "-p", String(broker.port), "--cafile", pki.caCertificate, "-q", "1", "-t", "PUSH_RC",
            "-m", Self.ping,
        ]
        try publish.run()
        publish.waitUntilExit()
        #expect(publish.terminationStatus == 0)
        #expect(try eventually { try sandbox.cli("get", "key_0").stdout == "v2\n" }, "\(daemon.log)")
        daemon.stop()
    }

    @Test func aBrokerThatIsNotUpYetIsRetried() throws {
        let (sandbox, server, broker) = try setUp()
        broker.stop()  // the device boots before the broker is reachable
        try server.serve(Sandbox.document(version: 1), etag: "\"v1\"")
        let daemon = try sandbox.startDaemon()
        #expect(eventually { daemon.log.contains("Failed to keep the MQTT connection") }, "\(daemon.log)")
        try broker.start()
        #expect(eventually(20) { daemon.log.contains("MQTT connected") }, "\(daemon.log)")
        try server.serve(Sandbox.document(version: 2), etag: "\"v2\"")
        try broker.publish(Self.ping)
        #expect(try eventually { try sandbox.cli("get", "key_0").stdout == "v2\n" }, "\(daemon.log)")
        #expect(daemon.stop() == 0)
        #expect(!daemon.log.contains("No error"), "a clean stop is not reported as a lost connection")
    }

    @Test func aBadPushSetupFailsBeforeReady() throws {
        let sandbox = try Sandbox()
        try sandbox.writeConfig(
            extra: "[Push]\nMQTT=mqtt://127.0.0.1:1\nMQTTUsername=u\nMQTTPasswordFile=/nonexistent/pw")
        let daemon = try DaemonProcess(sandbox)
        daemon.process.waitUntilExit()
        #expect(daemon.process.terminationStatus == 1)
        #expect(daemon.log.contains("cannot read MQTTPasswordFile=/nonexistent/pw"), "\(daemon.log)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.socketPath), "no socket left behind")
    }

    @Test func malformedPayloadsAreIgnoredAndTheChannelKeepsWorking() throws {
        let (sandbox, server, broker) = try setUp()
        try server.serve(Sandbox.document(version: 1), etag: "\"v1\"")
        let daemon = try sandbox.startDaemon()
        #expect(eventually { daemon.log.contains("MQTT connected") })
        for garbage in ["not json", "[1,2]", #"{"data":"STALE"}"#, String(repeating: "{", count: 5000)] {
            try broker.publish(garbage)
        }
        #expect(eventually { daemon.log.contains("Ignoring an MQTT message") }, "\(daemon.log)")
        try server.serve(Sandbox.document(version: 2), etag: "\"v2\"")
        try broker.publish(Self.ping)
        #expect(try eventually { try sandbox.cli("get", "key_0").stdout == "v2\n" }, "\(daemon.log)")
        // Handled in order, so all four were refused by now: one line for them (the count of the
        // other three follows a minute after the first; ``RefusalLog``'s unit tests show it).
        #expect(daemon.log.components(separatedBy: "Ignoring an MQTT message").count - 1 == 1, "\(daemon.log)")
        #expect(daemon.process.isRunning)
        daemon.stop()
    }
}
