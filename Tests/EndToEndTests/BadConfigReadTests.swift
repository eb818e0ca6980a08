import Foundation
import Glibc
import TestSupport
import Testing

/// Reads survive a bad config: a typo in an unrelated drop-in leaves `get`, `list`, `status`,
/// `check-update` and `activity` answering (exit 0, one warning per bad line on stderr, naming the
/// file and line, escaped), while `reload`, `doctor` and a starting rcagentd still fail on it.
@Suite struct BadConfigReadTests {
    @Test func aTypoInAnUnrelatedDropInLeavesEveryReadAnswering() throws {
        let sandbox = try Sandbox()
        let daemon = try sandbox.startServing(version: 1)
        // The value carries an escape sequence: the warning must not hand it to the terminal.
        try ReloadTests().dropIn(
            sandbox, "50-typo.conf", "[Agent]\nMinimumFetchInterval=banana\u{1B}[2J\nFetchTimeout=0\n")
        let bad = sandbox.configPath + ".d/50-typo.conf"

        let get = try sandbox.cli("get", "key_0")
        #expect(get.status == 0 && get.stdout == "v1\n", "\(get.stderr)")
        let warnings = get.stderr.split(separator: "\n")
        #expect(warnings.count == 2, "one warning per bad line, once: \(get.stderr)")
        #expect(warnings.first?.hasPrefix("Warning: \(bad):2: MinimumFetchInterval= 'banana") == true, "\(get.stderr)")
        #expect(warnings.last?.hasPrefix("Warning: \(bad):3: FetchTimeout= must be greater than 0") == true)
        #expect(!get.stderr.unicodeScalars.contains("\u{1B}"), "escaped: \(get.stderr)")

        for read in [["list"], ["status", "--json"], ["activity", "list"], ["get", "key_1", "--json"]] {
            let result = try sandbox.run("rcagent", read + ["--config", sandbox.configPath])
            #expect(result.status == 0, "\(read): \(result.stderr)")
            #expect(result.stderr.contains("Warning: \(bad):2:"), "\(read): \(result.stderr)")
        }

        // What changes state, and what checks the config, still fail on it.
        let reload = try sandbox.cli("reload")
        #expect(reload.status == 1 && reload.stderr.contains("\(bad):2:"), "\(reload.stderr)")
        let doctor = try sandbox.cli("doctor")
        #expect(doctor.status == 1 && doctor.stdout.contains("FAIL  config"), "\(doctor.stdout)")
        #expect(try sandbox.cli("fetch").status == 1)
        #expect(daemon.stop() == 0)
        let restart = try sandbox.run("rcagentd", ["--config", sandbox.configPath])
        #expect(restart.status != 0 && restart.stderr.contains("\(bad):2:"), "\(restart.stderr)")
    }

    /// A bad line a read does need falls back to that key's built-in default: here `VersionScheme=`
    /// (dotted), so `check-update` still tells the kiosk a required update is there.
    @Test func aBadLineAReadNeedsFallsBackToTheBuiltInDefault() throws {
        let offer = #"{"version": "2.0.0", "download": "https://example.com/app-2.0.0.deb"}"#
        let defaults = try JSONSerialization.data(withJSONObject: ["linux_required_update": offer])
        let sandbox = try Sandbox(
            defaults: String(decoding: defaults, as: UTF8.self), extraConfig: "[App]\nVersion=1.4.0")
        try ReloadTests().dropIn(sandbox, "60-scheme.conf", "[App]\nVersionScheme=semver\n")
        let result = try sandbox.cli("check-update")
        #expect(result.status == 101, "\(result.stdout)\(result.stderr)")
        #expect(result.stderr.contains("Warning: \(sandbox.configPath).d/60-scheme.conf:2: VersionScheme="))
    }
}
