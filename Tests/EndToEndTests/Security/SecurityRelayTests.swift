import Foundation
import Glibc
import TestSupport
import Testing

/// Issue 25 item 9: `rcadmin relay` ended with exit 0 on one HTTP 500 or 400 from the realtime
/// endpoint, so systemd's Restart=on-failure never restarted it and no version was pinged again;
/// and a version announced above the real one was recorded as pinged, so the real ones below it
/// never were. The fake Firebase backend (Tests/Fixtures/firebase_server.py) answers what the
/// tests force, a real mosquitto takes the pings.
@Suite struct SecurityRelayTests {
    let relays = RelayTests()

    /// What the relay's ledger recorded for its MQTT target, nil when nothing.
    func recorded(_ sandbox: Sandbox) -> String? {
        try? String(contentsOfFile: sandbox.root.path + "/relay-state/relay.json", encoding: .utf8)
    }

    @Test func aServerErrorOrABadRequestIsRetriedUntilItPasses() throws {
        let sandbox = try Sandbox()
        let server = try FirebaseServer(in: sandbox)
        let broker = try MosquittoBroker(in: sandbox)
        let subscriber = try RelayTests.Subscriber(broker, in: sandbox)
        try server.publish(version: 1, entries: ["key_0": "v1"])
        try server.updateMode(["realtimeStatus": 500])
        let relay = try relays.startRelay(sandbox, config: relays.relayConfig(sandbox, server, mqttPort: broker.port))
        defer { relay.stop() }
        #expect(
            eventually { relay.log.contains("Failed to open the realtime stream: realtime: HTTP 500") }, "\(relay.log)")
        try server.updateMode(["realtimeStatus": 400])
        #expect(
            eventually(20) { relay.log.contains("Failed to open the realtime stream: realtime: HTTP 400") },
            "\(relay.log)")
        #expect(relay.process.isRunning, "\(relay.log)")
        try server.updateMode(["realtimeStatus": nil])
        #expect(eventually(30) { subscriber.pings == [RelayTests.ping(1)] }, "\(subscriber.pings)\n\(relay.log)")
        #expect(relay.stop() == 0, "\(relay.log)")
    }

    /// Only what no retry changes ends it, with exit status 78 (the unit's RestartPreventExitStatus=):
    /// a 403, featureDisabled, an API key Google does not know, a project Installations does not know.
    @Test func onlyARefusalNoRetryChangesEndsItWithStatus78() throws {
        let cases: [(String, (FirebaseServer) throws -> Void, String)] = [
            ("403", { try $0.updateMode(["realtimeStatus": 403]) }, "realtime: HTTP 403"),
            ("a bad key", { try $0.updateMode(["apiKey": "not-the-configured-key"]) }, "API key not valid"),
            ("featureDisabled", { try $0.push(["featureDisabled": true]) }, "(featureDisabled); the relay stops"),
            // A project or app Firebase Installations does not know: Google's 404 NOT_FOUND.
            (
                "404 at Installations", { try $0.updateMode(["installationsStatus": 404]) },
                "Firebase Installations: cannot create the installation: HTTP 404"
            ),
        ]
        for (name, refuse, message) in cases {
            let sandbox = try Sandbox()
            let server = try FirebaseServer(in: sandbox)
            try server.publish(version: 1, entries: ["key_0": "v1"])
            let config = try relays.relayConfig(sandbox, server, mqttPort: try Mosquitto.freePort())
            if name != "featureDisabled" { try refuse(server) }
            let relay = try relays.startRelay(sandbox, config: config)
            if name == "featureDisabled" {
                #expect(eventually { relay.log.contains("Realtime stream open") }, "\(relay.log)")
                try refuse(server)
            }
            #expect(eventually(20) { !relay.process.isRunning }, "\(name): \(relay.log)")
            #expect(relay.stop() == 78, "\(name): \(relay.log)")
            #expect(relay.log.contains(message), "\(name): \(relay.log)")
        }
    }

    /// A version announced above the real one is confirmed by a fetch, not taken on trust: never
    /// pinged nor recorded, and the next real version is relayed as usual.
    @Test func aVersionThatDoesNotExistIsNotRecordedAsPinged() throws {
        let sandbox = try Sandbox()
        let server = try FirebaseServer(in: sandbox)
        let broker = try MosquittoBroker(in: sandbox)
        let subscriber = try RelayTests.Subscriber(broker, in: sandbox)
        try server.publish(version: 1, entries: ["key_0": "v1"])
        let relay = try relays.startRelay(sandbox, config: relays.relayConfig(sandbox, server, mqttPort: broker.port))
        defer { relay.stop() }
        #expect(eventually { subscriber.pings == [RelayTests.ping(1)] }, "\(subscriber.pings)\n\(relay.log)")
        #expect(eventually { recorded(sandbox)?.contains(":1}") == true }, "\(recorded(sandbox) ?? "")")

        try server.push(["latestTemplateVersionNumber": "99"])
        #expect(
            eventually(30) {
                relay.log.contains(
                    "Not relaying template version 99: the realtime stream announced it, but the project's template is version 1"
                )
            }, "\(relay.log)")
        #expect(recorded(sandbox)?.contains(":1}") == true, "\(recorded(sandbox) ?? "")")
        #expect(subscriber.pings == [RelayTests.ping(1)])

        try relays.publish(server, 2)
        #expect(eventually { subscriber.pings == [1, 2].map(RelayTests.ping) }, "\(subscriber.pings)\n\(relay.log)")
        #expect(eventually { recorded(sandbox)?.contains(":2}") == true }, "\(recorded(sandbox) ?? "")")
        #expect(relay.stop() == 0, "\(relay.log)")
    }
}
