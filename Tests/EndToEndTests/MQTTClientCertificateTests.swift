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
            in: sandbox.root.appendingPathComponent("cert-broker"),
            settings: """
                cafile \(pki.caCertificate)
                certfile \(pki.serverCertificate)
                keyfile \(pki.serverKey)
                require_certificate true
                use_identity_as_username true
                acl_file \(aclFile)

                """)
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
        let broker = try Mosquitto(
            in: sandbox.root.appendingPathComponent("cert-broker"),
            settings: """
                cafile \(pki.caCertificate)
                certfile \(pki.serverCertificate)
                keyfile \(pki.serverKey)
                require_certificate true

                """)
        try sandbox.writeConfig(
            extra: "[Push]\nMQTT=mqtts://127.0.0.1:\(broker.port)\nMQTTCAFile=\(pki.caCertificate)\n")
        try sandbox.write(Sandbox.document(version: 1), to: sandbox.remotePath)
        let daemon = try sandbox.startDaemon()
        #expect(eventually { daemon.log.contains("Failed to keep the MQTT connection") }, "\(daemon.log)")
        #expect(try sandbox.cli("get", "key_0").stdout == "v1\n")
        daemon.stop()
    }
}
