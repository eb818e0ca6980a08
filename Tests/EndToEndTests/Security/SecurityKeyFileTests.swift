import Foundation
import Glibc
import TestSupport
import Testing

/// Issue 25 item 9: rcadmin used a service-account key file others may read without a word.
@Suite struct SecurityKeyFileTests {
    /// Issue 25: a key file others may read was used without a word. rcadmin warns, once, as ssh
    /// does for a private key, and still works (the operator decides).
    @Test func aKeyFileOthersMayReadIsWarnedOfOnce() throws {
        let fixture = try AdminTests.Fixture()
        let quiet = try fixture.rcadmin(["template", "get"])
        #expect(quiet.status == 0 && !quiet.stderr.contains("Warning"), "\(quiet.stderr)")
        chmod(fixture.account.keyFilePath, 0o640)
        let warned = try fixture.rcadmin(["template", "get"])
        #expect(warned.status == 0, "\(warned.stderr)")
        let path = fixture.account.keyFilePath
        let warning = "Warning: \(path) is readable by others; chmod 600 \(path)\n"
        #expect(warned.stderr.components(separatedBy: warning).count == 2, "\(warned.stderr)")
        #expect(warned.stderr.hasPrefix(warning), "\(warned.stderr)")
    }

    /// The relay, a service, logs the same warning once at start.
    @Test func theRelayLogsTheWarningToo() throws {
        let fixture = try AdminTests.Fixture()
        let relays = RelayTests()
        chmod(fixture.account.keyFilePath, 0o644)
        let config = try relays.relayConfig(
            fixture.sandbox, fixture.server, mqttPort: try Mosquitto.freePort(), project: AdminTests.project,
            extra: "[Relay]\nFCMTopic=PUSH_RC")
        let relay = try relays.startRelay(fixture.sandbox, config: config, account: fixture.account)
        defer { relay.stop() }
        let path = fixture.account.keyFilePath
        #expect(
            relay.log.components(separatedBy: "\(path) is readable by others; chmod 600 \(path)").count == 2,
            "\(relay.log)")
    }
}
