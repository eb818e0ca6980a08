import Foundation
import Glibc
import TestSupport
import Testing

/// Reload bugs a review found, end to end with the built binaries; each test failed before its
/// fix (see the commit that added it).
@Suite struct ReviewFindingsReloadTests {
    func dropIn(_ sandbox: Sandbox, _ name: String, _ text: String) throws {
        let directory = sandbox.configPath + ".d"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try sandbox.write(text, to: directory + "/" + name)
    }

    /// The `push:` line of `rcagent status`, or nil when there is none.
    func pushLine(_ sandbox: Sandbox) throws -> String? {
        try sandbox.cli("status").stdout.split(separator: "\n").first { $0.hasPrefix("push:") }.map(String.init)
    }

    /// REVIEW FINDING 2 (failed until the fix): a reload that removes `[Push] MQTT=` stops the
    /// channel, but `status` (and `doctor`) went on reporting the channel that no longer exists,
    /// as "connected" or "disconnected, reconnecting", until the daemon was restarted.
    @Test func aReloadThatRemovesMQTTTakesItsStateOutOfStatus() throws {
        let (sandbox, server, broker) = try MQTTTests().setUp()
        let daemon = try MQTTTests().startConnected(sandbox, server)
        #expect(try eventually { try pushLine(sandbox)?.contains(" connected, topics ") == true })

        try dropIn(sandbox, "10-no-mqtt.conf", "[Push]\nMQTT=\n")
        let reload = try sandbox.cli("reload")
        #expect(reload.stdout == "reloaded: Push.MQTT changed\n", "\(reload.stdout)\(reload.stderr)")
        // The channel is gone: nothing may claim a push connection any more.
        #expect(try eventually(5) { try pushLine(sandbox) == nil }, "\((try? pushLine(sandbox)) ?? nil ?? "")")
        #expect(daemon.stop() == 0)
        withExtendedLifetime(broker) {}
    }
}
