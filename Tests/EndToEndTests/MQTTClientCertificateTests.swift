import Foundation
import Glibc
import TestSupport
import Testing

/// A device that proves who it is with a TLS client certificate, on a mosquitto that takes the
/// certificate's name as the user name and enforces the per-device ACL the fleet guide recommends:
/// a device reads only the fleet's ping topic and its own, and writes only its own report. The
/// agent must get by with exactly that.
@Suite struct MQTTClientCertificateTests {
    /// The ACL of the fleet guide, for mosquitto's `acl_file`: `%u` is the certificate's name,
    /// which is the device id.
    static let acl = """
        pattern read PUSH_RC
        pattern read PUSH_RC/%u
        pattern write rcagent/status/%u

        user operator
        topic write PUSH_RC
        topic write PUSH_RC/+
        topic read rcagent/status/+

        """

    @Test func aDeviceCertificateAndThePerDeviceACLCarryPushAndReport() throws {
        let sandbox = try Sandbox()
        let pki = try TestPKI(in: sandbox.root)
        let server = try ConfigServer(in: sandbox)
        try server.serve(Sandbox.document(version: 1), etag: "\"v1\"")
        try sandbox.writeConfig(extra: "[Source]\nType=http\nURL=\(server.url)\n")
        // The device id is made with the state database, at the first start: the certificate is
        // issued for it afterwards, as an enrolment service would.
        let daemon = try sandbox.startDaemon()
        let deviceId = try FirebaseSourceTests().deviceId(sandbox)
        let device = try pki.clientCertificate(commonName: deviceId)
        let operatorIdentity = try pki.clientCertificate(commonName: "operator")

        let aclFile = sandbox.root.appendingPathComponent("acl").path
        try Self.acl.write(toFile: aclFile, atomically: true, encoding: .utf8)
        let broker = try Mosquitto(
            in: sandbox, tls: pki,
            extra: "require_certificate true\nuse_identity_as_username true\nacl_file \(aclFile)\n")
        let tls = [
            "--cafile", pki.caCertificate, "--cert", operatorIdentity.certificate, "--key", operatorIdentity.key,
        ]
        let subscriber = try ReportSubscriber(sandbox, port: broker.port, topic: "rcagent/status/+", options: tls)

        try sandbox.writeConfig(
            extra: """
                [Source]
                Type=http
                URL=\(server.url)
                [Push]
                MQTT=mqtts://127.0.0.1:\(broker.port)
                MQTTCAFile=\(pki.caCertificate)
                MQTTClientCertificate=\(device.certificate)
                MQTTClientKey=\(device.key)
                Jitter=0
                [Report]
                MQTTStatusTopic=rcagent/status
                """)
        #expect(try sandbox.cli("reload").status == 0)
        func reported(_ version: String) -> Bool {
            subscriber.reports(on: "rcagent/status/\(deviceId)").last?["templateVersion"] as? String == version
        }
        #expect(eventually(20) { reported("1") }, "\(daemon.log)")

        // The operator's tools log in the same way: the ping on the fleet topic reaches the device
        // (its subscription passed the ACL), and the fleet view reads the device's report.
        try server.serve(Sandbox.document(version: 2), etag: "\"v2\"")
        let login = [
            "--mqtt", "mqtts://127.0.0.1:\(broker.port)", "--ca-file", pki.caCertificate, "--cert-file",
            operatorIdentity.certificate, "--key-file", operatorIdentity.key,
        ]
        let ping = try sandbox.run("rcadmin", ["notify-stale"] + login)
        #expect(ping.status == 0, "\(ping.stderr)")
        #expect(eventually(20) { reported("2") }, "\(daemon.log)")
        #expect(!daemon.log.contains("Failed to subscribe"), "\(daemon.log)")
        let fleet = try sandbox.run("rcadmin", ["fleet", "status", "--json"] + login)
        #expect(fleet.status == 0, "\(fleet.stderr)")
        let json = try JSONSerialization.jsonObject(with: Data(fleet.stdout.utf8)) as? [String: Any]
        #expect(json?["newestVersion"] as? String == "2", "\(fleet.stdout)")
        #expect((json?["counts"] as? [String: Any])?["online"] as? Int == 1, "\(fleet.stdout)")
        // Half a pair is refused before anything is sent.
        let half = try sandbox.run(
            "rcadmin",
            ["notify-stale", "--mqtt", "mqtts://127.0.0.1:\(broker.port)", "--cert-file", device.certificate])
        #expect(half.status == 64 && half.stderr.contains("--cert-file and --key-file go together"), "\(half.stderr)")
        daemon.stop()
    }

    @Test func withoutItsCertificateTheDeviceIsRefusedAndKeepsServing() throws {
        let sandbox = try Sandbox()
        let pki = try TestPKI(in: sandbox.root)
        let broker = try Mosquitto(in: sandbox, tls: pki, extra: "require_certificate true\n")
        try sandbox.writeConfig(
            extra: "[Push]\nMQTT=mqtts://127.0.0.1:\(broker.port)\nMQTTCAFile=\(pki.caCertificate)\n")
        try sandbox.write(Sandbox.document(version: 1), to: sandbox.remotePath)
        let daemon = try sandbox.startDaemon()
        #expect(eventually { daemon.log.contains("Failed to keep the MQTT connection") }, "\(daemon.log)")
        #expect(try sandbox.cli("get", "key_0").stdout == "v1\n")
        daemon.stop()
    }
}

/// A broker that refuses a subscription (its ACL, or a cluster that could not set up the
/// subscription's storage in time) answers SUBACK 0x80 and keeps the connection: the device must
/// notice, say so, and ask again, or it stays deaf to pings while everything looks connected.
/// mosquitto's dynamic-security plugin refuses subscriptions so, and takes new rules live.
@Suite struct MQTTRefusedSubscriptionTests {
    @Test func aRefusedSubscriptionIsRetriedUntilTheBrokerTakesIt() throws {
        let sandbox = try Sandbox()
        let server = try ConfigServer(in: sandbox)
        try server.serve(Sandbox.document(version: 1), etag: "\"v1\"")
        let security = sandbox.root.appendingPathComponent("dynamic-security.json").path
        let initialized = try runProcess("/usr/bin/mosquitto_ctrl", ["dynsec", "init", security, "admin", "adminpw"])
        try #require(initialized.status == 0, "\(initialized.stderr)")
        let brokerLog = sandbox.root.appendingPathComponent("broker.log").path
        let broker = try Mosquitto(
            in: sandbox.root.appendingPathComponent("dynsec-broker"),
            settings: """
                plugin /usr/lib/x86_64-linux-gnu/mosquitto_dynamic_security.so
                plugin_opt_config_file \(security)
                log_dest file \(brokerLog)
                log_type all

                """)
        /// The SUBSCRIBE requests for PUSH_RC and the connections the broker saw, from its log.
        func seen() -> (subscribes: Int, connections: Int) {
            let lines = ((try? String(contentsOfFile: brokerLog, encoding: .utf8)) ?? "").split(separator: "\n")
            return (
                lines.filter { $0.hasSuffix("\tPUSH_RC (QoS 1)") }.count,
                lines.filter { $0.contains("New client connected") && !$0.contains(" as auto-") }.count
            )
        }
        func control(_ arguments: String...) throws {
            let result = try runProcess(
                "/usr/bin/mosquitto_ctrl",
                ["-h", "127.0.0.1", "-p", String(broker.port), "-u", "admin", "-P", "adminpw", "dynsec"] + arguments)
            try #require(result.status == 0, "mosquitto_ctrl \(arguments): \(result.stdout)\(result.stderr)")
        }
        // Devices connect without a user, and may subscribe to nothing yet.
        try control("createGroup", "devices")
        try control("setAnonymousGroup", "devices")
        try control("createRole", "pinged")
        try control("addGroupRole", "devices", "pinged")
        try sandbox.writeConfig(
            extra: "[Source]\nType=http\nURL=\(server.url)\n[Push]\nMQTT=mqtt://127.0.0.1:\(broker.port)\nJitter=0\n")
        let daemon = try sandbox.startDaemon()
        #expect(
            eventually { daemon.log.contains("refused the subscription to PUSH_RC; pings there are not heard") },
            "\(daemon.log)")
        // Under the whole suite's disk load the daemon can take many seconds to answer `status`
        // (its queue waits on fsyncs): the bound is for a failing run only.
        var shown = ""
        #expect(
            try eventually(60) {
                shown = try sandbox.cli("status").stdout
                return shown.contains("subscription to PUSH_RC refused")
            }, "status shows it: \(shown)\n\(daemon.log)")

        // It asks again on the same connection (a reconnect would cost every device a fetch).
        #expect(eventually(20) { seen().subscribes >= 3 }, "\(seen())")
        #expect(seen().connections == 1)

        // The operator fixes the rules; mosquitto's plugin then drops the group's clients, and the
        // device's next connection is granted its subscriptions.
        for topic in ["PUSH_RC", "PUSH_RC/+"] {
            try control("addRoleACL", "pinged", "subscribePattern", topic, "allow")
            try control("addRoleACL", "pinged", "publishClientReceive", topic, "allow")
        }
        try control("addRoleACL", "pinged", "publishClientSend", "PUSH_RC", "allow")  // for the test's own ping
        #expect(
            try eventually(60) { try sandbox.cli("status").stdout.contains("connected, topics PUSH_RC") },
            "status shows it")
        try server.serve(Sandbox.document(version: 2), etag: "\"v2\"")
        try broker.publish(MQTTTests.ping)
        #expect(try eventually { try sandbox.cli("get", "key_0").stdout == "v2\n" }, "\(daemon.log)")
        daemon.stop()
    }
}
