import Foundation
import TestSupport
import Testing

/// `rcagent check-update` through the built binary: exit codes a boot script can trust.
@Suite struct CheckUpdateTests {
    static func offer(_ version: String, deadline: String? = nil) -> String {
        var fields = [#""version": "\#(version)""#, #""download": "https://dl.example/app_\#(version).deb""#]
        if let deadline { fields.append(#""deadline": "\#(deadline)""#) }
        return "{" + fields.joined(separator: ", ") + "}"
    }

    func sandbox(required: String = "", recommended: String = "", app: String = "Version=1.4.0") throws -> Sandbox {
        let defaults = try JSONSerialization.data(withJSONObject: [
            "linux_required_update": required, "linux_recommended_update": recommended,
        ])
        return try Sandbox(defaults: String(decoding: defaults, as: UTF8.self), extraConfig: "[App]\n\(app)")
    }

    func json(_ result: ProcessResult) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    }

    @Test func noUpdateExitsZero() throws {
        let sandbox = try sandbox(required: Self.offer("1.4.0"), recommended: Self.offer("1.3.9"))
        let result = try sandbox.cli("check-update")
        #expect(result.status == 0)
        #expect(result.stdout == "no update: installed 1.4.0 is current\n")
    }

    /// `--required` while a recommended update applies: not "current" (issue 29 item 4).
    @Test func oneKindAloneSaysTheOtherWasNotChecked() throws {
        let sandbox = try sandbox(recommended: Self.offer("1.5.0"))
        let result = try sandbox.cli("check-update", "--required")
        #expect(result.status == 0)
        #expect(
            result.stdout
                == "no required update for installed 1.4.0 (--required: the recommended-update key was not checked)\n")
        #expect(try sandbox.cli("check-update", "--recommended").status == 100)
    }

    @Test func recommendedExits100() throws {
        let sandbox = try sandbox(recommended: Self.offer("1.5.0", deadline: "2999-01-01T00:00:00Z"))
        let result = try sandbox.cli("check-update")
        #expect(result.status == 100)
        #expect(
            result.stdout.hasPrefix(
                "recommended update: 1.5.0 (installed 1.4.0)\ndownload: https://dl.example/app_1.5.0.deb\n"))
        let report = try json(sandbox.cli("check-update", "--json"))
        #expect(report["result"] as? String == "recommended")
        #expect(report["installed"] as? String == "1.4.0")
        #expect(report["target"] as? String == "1.5.0")
        #expect(report["download"] as? String == "https://dl.example/app_1.5.0.deb")
        #expect(report["deadline"] as? String == "2999-01-01T00:00:00Z")
        #expect(report["stale"] as? Bool == false)
        #expect(report["error"] is NSNull)
        #expect(report.keys.contains("configAgeSeconds") && report.keys.contains("message"))
    }

    @Test func requiredExits101AndBeatsRecommended() throws {
        let sandbox = try sandbox(required: Self.offer("1.4.1"), recommended: Self.offer("1.6.0"))
        let result = try sandbox.cli("check-update")
        #expect(result.status == 101)
        #expect(result.stdout.hasPrefix("required update: 1.4.1 (installed 1.4.0)"))
        #expect(try sandbox.cli("check-update", "--recommended").status == 100, "--recommended looks at that key only")
        #expect(try sandbox.cli("check-update", "--required", "--app-version", "1.4.1").status == 0)
    }

    @Test func recommendedPastItsDeadlineExits101() throws {
        let sandbox = try sandbox(recommended: Self.offer("1.5.0", deadline: "2020-01-01T00:00:00Z"))
        let result = try sandbox.cli("check-update")
        #expect(result.status == 101)
        #expect(result.stdout.hasPrefix("required update (recommended, past its deadline): 1.5.0"))
        #expect(try json(sandbox.cli("check-update", "--json"))["result"] as? String == "required")
    }

    @Test(arguments: [
        ("{not json", "linux_required_update: invalid JSON"),
        (#"{"version": "1.5.0"}"#, #"missing "download""#),
        (#"{"version": "1.5", "download": "x"}"#, #"invalid version "1.5""#),
        (#"{"version": "1.5.0-beta", "download": "x"}"#, #"part 3 "0-beta" is not a decimal number"#),
    ])
    func badValueExitsOneAndSaysWhy(_ value: String, _ message: String) throws {
        let sandbox = try sandbox(required: value)
        let result = try sandbox.cli("check-update")
        #expect(result.status == 1)
        #expect(result.stderr.contains("Error: cannot tell whether an update applies: "))
        #expect(result.stderr.contains(message), "\(result.stderr)")
        let report = try json(sandbox.cli("check-update", "--json"))
        #expect(report["result"] as? String == "unknown")
        #expect((report["error"] as? String)?.contains(message) == true)
    }

    /// `--format env`: what a shell's eval reads back is exactly the JSON fields, with the same exit status.
    @Test func envFormatRoundTripsThroughAShell() throws {
        let sandbox = try sandbox(required: Self.offer("1.5.0"))
        let script =
            #"out=$("$RCAGENT" check-update --format env); s=$?; eval "$out"; "#
            + #"printf '%s|%s|%s|%s|%s|%s|%s|%s\n' "$s" "$RCAGENT_UPDATE_RESULT" "$RCAGENT_UPDATE_INSTALLED" "#
            + #""$RCAGENT_UPDATE_VERSION" "$RCAGENT_UPDATE_DOWNLOAD" "$RCAGENT_UPDATE_DEADLINE" "$RCAGENT_UPDATE_STALE" "#
            + #""$RCAGENT_UPDATE_ERROR""#
        let environment = ["RCAGENT": Binaries.url("rcagent").path, "RCAGENT_CONFIG": sandbox.configPath]
        let result = try sandbox.run("/bin/sh", ["-c", script], environment: environment)
        #expect(result.stdout == "101|required|1.4.0|1.5.0|https://dl.example/app_1.5.0.deb||no|\n", "\(result.stderr)")

        let broken = try self.sandbox(required: "{oops")
        let failed = try broken.run(
            "/bin/sh", ["-c", script],
            environment: ["RCAGENT": Binaries.url("rcagent").path, "RCAGENT_CONFIG": broken.configPath])
        #expect(
            failed.stdout.hasPrefix("1|unknown|1.4.0||||no|linux_required_update: invalid JSON"), "\(failed.stdout)")
        #expect(failed.stderr.contains("Error: cannot tell whether an update applies: "))
        let usage = try sandbox.cli("check-update", "--format", "env", "--json")
        #expect(usage.status == 64)
    }

    @Test func missingOrBadInstalledVersionExitsOne() throws {
        let none = try sandbox(required: Self.offer("1.5.0"), app: "")
        let result = try none.cli("check-update")
        #expect(result.status == 1)
        #expect(result.stderr.contains("no installed version"))
        let bad = try none.cli("check-update", "--app-version", "1.4")
        #expect(bad.status == 1)
        #expect(bad.stderr.contains(#"--app-version: invalid version "1.4""#))
    }

    @Test func installedVersionFromTheDpkgDatabase() throws {
        let sandbox = try sandbox(required: Self.offer("2:1.4.0-2"), app: "Package=kiosk-app\nVersionScheme=debian")
        let status = sandbox.root.appendingPathComponent("dpkg-status").path
        try sandbox.write("Package: kiosk-app\nStatus: install ok installed\nVersion: 2:1.4.0-1\n\n", to: status)
        let result = try sandbox.run(
            "rcagent", ["check-update", "--config", sandbox.configPath], environment: ["RCAGENT_DPKG_STATUS": status])
        #expect(result.status == 101, "\(result.stderr)")
        #expect(result.stdout.hasPrefix("required update: 2:1.4.0-2 (installed 2:1.4.0-1)"))
        try sandbox.write("Package: kiosk-app\nStatus: install ok installed\nVersion: 2:1.4.0-2\n\n", to: status)
        let current = try sandbox.run(
            "rcagent", ["check-update", "--config", sandbox.configPath], environment: ["RCAGENT_DPKG_STATUS": status])
        #expect(current.status == 0)
    }

    @Test func freshFallsBackToTheCacheWhenTheDaemonIsDownAndSaysSo() throws {
        let sandbox = try sandbox(required: Self.offer("1.5.0"))
        let result = try sandbox.cli("check-update", "--fresh", "--timeout", "2s")
        #expect(result.status == 101)
        #expect(result.stdout.contains("note: could not refresh (the daemon is not running"), "\(result.stdout)")
        let report = try json(sandbox.cli("check-update", "--fresh", "--json"))
        #expect((report["fresh"] as? [String: Any])?["ok"] as? Bool == false)
    }

    @Test func freshFetchesTheNewestConfigFirst() throws {
        let sandbox = try sandbox(app: "Version=1.4.0\n[Agent]\nMinimumFetchInterval=12h")
        try sandbox.publish(Sandbox.document(version: 1))
        let daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--wait").status == 0)
        #expect(try sandbox.cli("check-update").status == 0)
        // The update is published; without --fresh the cache would not know yet (interval 12 h, no watch
        // of the source is assumed here: the daemon may or may not have seen it).
        try sandbox.publish(Sandbox.document(version: 2, extra: ["linux_required_update": Self.offer("1.5.0")]))
        let result = try sandbox.cli("check-update", "--fresh", "--json")
        #expect(result.status == 101, "\(result.stdout)\(result.stderr)")
        let report = try json(result)
        #expect((report["fresh"] as? [String: Any])?["ok"] as? Bool == true)
        #expect(report["target"] as? String == "1.5.0")
        daemon.stop()
    }
}

/// packaging/rcagent-update-check, the script behind the boot unit.
@Suite struct UpdateCheckScriptTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("packaging/rcagent-update-check").path

    func runScript(_ sandbox: Sandbox, onRequired: String) throws -> ProcessResult {
        try sandbox.run(
            "/bin/sh", [Self.script],
            environment: [
                "RCAGENT": Binaries.url("rcagent").path, "RCAGENT_CONFIG": sandbox.configPath,
                "RCAGENT_ON_REQUIRED_UPDATE": onRequired, "RCAGENT_CHECK_TIMEOUT": "1s",
            ])
    }

    @Test func requiredUpdateRunsTheConfiguredCommandWithItsDetails() throws {
        let defaults = try JSONSerialization.data(withJSONObject: [
            "linux_required_update": CheckUpdateTests.offer("1.5.0")
        ])
        let sandbox = try Sandbox(
            defaults: String(decoding: defaults, as: UTF8.self), extraConfig: "[App]\nVersion=1.4.0")
        let record = sandbox.root.appendingPathComponent("record").path
        let result = try runScript(
            sandbox,
            onRequired: "echo \"$RCAGENT_UPDATE_KIND $RCAGENT_UPDATE_VERSION $RCAGENT_UPDATE_DOWNLOAD\" > \(record)")
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(
            try String(contentsOfFile: record, encoding: .utf8) == "required 1.5.0 https://dl.example/app_1.5.0.deb\n")
    }

    @Test func noUpdateRunsNothing() throws {
        let sandbox = try Sandbox(defaults: #"{"linux_required_update": ""}"#, extraConfig: "[App]\nVersion=1.4.0")
        let record = sandbox.root.appendingPathComponent("record").path
        let result = try runScript(sandbox, onRequired: "touch \(record)")
        #expect(result.status == 0)
        #expect(!FileManager.default.fileExists(atPath: record))
    }

    @Test func cannotTellFailsTheUnit() throws {
        let sandbox = try Sandbox(defaults: #"{"linux_required_update": "{oops"}"#, extraConfig: "[App]\nVersion=1.4.0")
        let result = try runScript(sandbox, onRequired: "true")
        #expect(result.status == 1)
        #expect(result.stderr.contains("cannot tell"))
        #expect(result.stderr.contains("linux_required_update: invalid JSON"), "rcagent's reason reaches the journal")
    }

    /// With the daemon up the fresh fetch works and there is no note: the old script then printed
    /// check-update's empty output as an empty line.
    @Test func cannotTellWithAFreshFetchPrintsNoEmptyLine() throws {
        let sandbox = try Sandbox(defaults: #"{"linux_required_update": ""}"#, extraConfig: "[App]\nVersion=1.4.0")
        try sandbox.publish(Sandbox.document(version: 1, extra: ["linux_required_update": "{oops"]))
        let daemon = try sandbox.startDaemon()
        let result = try runScript(sandbox, onRequired: "true")
        #expect(result.status == 1)
        #expect(result.stderr.contains("linux_required_update: invalid JSON"), "\(result.stderr)")
        #expect(result.stdout.isEmpty, "\(result.stdout.debugDescription)")
        #expect(daemon.stop() == 0)
    }

    /// The script reads `check-update --format env`, not text meant for people: a download URL and a
    /// message full of shell syntax reach the command exactly, and nothing in them runs.
    @Test func offerFieldsReachTheCommandExactlyAndNeverRun() throws {
        let marker = "/tmp/rca-never-\(UUID().uuidString.prefix(8))"
        let message = "Update now: \"quoted\" 'single' $(touch \(marker)) `touch \(marker)` $HOME \\ back\nsecond line"
        let download = "https://dl.example/app.deb?a=1&b=$(touch \(marker))"
        let offer = try JSONSerialization.data(withJSONObject: [
            "version": "1.5.0", "download": download, "message": message, "deadline": "2020-01-01T00:00:00Z",
        ])
        let defaults = try JSONSerialization.data(withJSONObject: [
            "linux_required_update": String(decoding: offer, as: UTF8.self)
        ])
        let sandbox = try Sandbox(
            defaults: String(decoding: defaults, as: UTF8.self), extraConfig: "[App]\nVersion=1.4.0")
        let record = sandbox.root.appendingPathComponent("record").path
        let result = try runScript(
            sandbox,
            onRequired:
                "printf '%s|%s|%s|%s' \"$RCAGENT_UPDATE_VERSION\" \"$RCAGENT_UPDATE_DOWNLOAD\" \"$RCAGENT_UPDATE_DEADLINE\" \"$RCAGENT_UPDATE_MESSAGE\" > \(record)"
        )
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(
            try String(contentsOfFile: record, encoding: .utf8)
                == "1.5.0|\(download)|2020-01-01T00:00:00Z|\(message)")
        #expect(!FileManager.default.fileExists(atPath: marker))
        #expect(result.stdout.contains("a required update applies: 1.5.0 (installed 1.4.0)"), "\(result.stdout)")
    }
}

/// etc/default/rcagent-update-check, shipped in the device package: every variable the script
/// reads is there, commented out, so the shipped file changes nothing.
@Suite struct UpdateCheckDefaultsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test func everyVariableIsDocumentedAndNoneIsSet() throws {
        let script = try String(
            contentsOf: Self.root.appendingPathComponent("packaging/rcagent-update-check"), encoding: .utf8)
        let defaultsPath = Self.root.appendingPathComponent("etc/default/rcagent-update-check").path
        let defaults = try String(contentsOfFile: defaultsPath, encoding: .utf8)
        // The settings: the variables the script reads with a default (`${NAME:-...}`).
        let read = Set(script.matches(of: /\$\{(RCAGENT[A-Z_]*):-/).map { String($0.output.1) })
        #expect(
            read == ["RCAGENT", "RCAGENT_CHECK_TIMEOUT", "RCAGENT_ON_RECOMMENDED_UPDATE", "RCAGENT_ON_REQUIRED_UPDATE"])
        for name in read {
            #expect(defaults.contains("\n#\(name)="), "\(name) is not in the defaults file")
        }
        // Every line a comment: read by sh as the unit's EnvironmentFile would be, it sets nothing.
        #expect(defaults.split(separator: "\n").allSatisfy { $0.hasPrefix("#") }, "\(defaults)")
        let sourced = try runProcess(
            "/bin/sh", ["-c", #". "$0"; env | grep '^RCAGENT' || true"#, defaultsPath],
            environment: ["PATH": "/usr/bin:/bin"])
        #expect(sourced.status == 0 && sourced.stdout.isEmpty, "\(sourced.stdout)\(sourced.stderr)")
    }

    @Test func noCommandConfiguredNamesTheVariableAndTheFile() throws {
        let defaults = try JSONSerialization.data(withJSONObject: [
            "linux_required_update": CheckUpdateTests.offer("1.5.0")
        ])
        let sandbox = try Sandbox(
            defaults: String(decoding: defaults, as: UTF8.self), extraConfig: "[App]\nVersion=1.4.0")
        let result = try UpdateCheckScriptTests().runScript(sandbox, onRequired: "")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout.contains(
                "no command is configured for a required update: set RCAGENT_ON_REQUIRED_UPDATE in /etc/default/rcagent-update-check"
            ), "\(result.stdout)")
    }
}
