import RCCore
import RCSystem
import TestSupport
import Testing

@testable import RCAgent

/// The app version the `firebase` source sends: read as the report and `check-update` read it
/// (``InstalledApp``), dpkg's status file included.
@Suite struct FirebaseSourceAppVersionTests {
    @Test func theConfiguredVersionWins() {
        var config = AgentConfig()
        config.appVersion = "1.4.0.7"
        config.appPackage = "kiosk-app"
        #expect(FirebaseSource.appVersion(config: config, environment: [:]) == "1.4.0.7")
    }

    @Test func aPackageIsReadFromTheDpkgStatusFileTheEnvironmentNames() throws {
        try TemporaryDirectory.with { directory in
            let status = try directory.write(
                "status", "Package: kiosk-app\nStatus: install ok installed\nVersion: 2.1-3\n\n")
            var config = AgentConfig()
            config.appPackage = "kiosk-app"
            #expect(FirebaseSource.appVersion(config: config, environment: ["RCAGENT_DPKG_STATUS": status]) == "2.1-3")
            config.appPackage = "not-installed"
            #expect(FirebaseSource.appVersion(config: config, environment: ["RCAGENT_DPKG_STATUS": status]) == "0")
        }
    }
}
