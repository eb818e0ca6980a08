import Foundation
import Glibc
import TestSupport
import Testing

/// A reader that may not see the state database (issue 16): EACCES on the state directory or on
/// state.db is never "not created yet". `get` warns, `status` says unreadable, `doctor` fails and
/// `check-update` exits 1 (cannot tell) while the database holds a required update the defaults
/// file does not.
@Suite(.serialized) struct SecurityUnreadableStateTests {
    static let nobody = "65534"

    /// A sandbox whose database (written by a real daemon, then stopped) holds a required update,
    /// while the defaults file offers none: a reader falling back to the defaults would say "no update".
    func sandboxWithRequiredUpdate() throws -> Sandbox {
        let sandbox = try Sandbox(defaults: #"{"linux_required_update": ""}"#, extraConfig: "[App]\nVersion=1.4.0")
        let offer = #"{"version": "1.5.0", "download": "https://dl.example/app_1.5.0.deb"}"#
        try sandbox.publish(Sandbox.document(version: 1, extra: ["linux_required_update": offer]))
        let daemon = try sandbox.startDaemon()
        let fetch = try sandbox.cli("fetch", "--wait")
        #expect(daemon.stop() == 0)
        try #require(fetch.status == 0, "\(fetch.stderr)")
        // As root the update is there: the test below is about who may read, not what is stored.
        try #require(try sandbox.cli("check-update").status == 101)
        chmod(sandbox.root.path, 0o755)
        for path in [sandbox.configPath, sandbox.defaultsPath] { chmod(path, 0o644) }
        return sandbox
    }

    func asNobody(_ sandbox: Sandbox, _ arguments: String...) throws -> ProcessResult {
        try sandbox.run(
            "/usr/bin/setpriv",
            ["--reuid=\(Self.nobody)", "--regid=\(Self.nobody)", "--clear-groups", Binaries.url("rcagent").path]
                + arguments + ["--config", sandbox.configPath])
    }

    func expectUnreadable(_ sandbox: Sandbox) throws {
        let get = try asNobody(sandbox, "get", "linux_required_update")
        #expect(get.stderr.contains("Warning: cannot read \(sandbox.databasePath)"), "\(get.stdout)\(get.stderr)")
        #expect(get.stderr.contains("Permission denied"), "\(get.stderr)")

        let status = try asNobody(sandbox, "status")
        #expect(status.stdout.contains("database:     unreadable: "), "\(status.stdout)")
        #expect(!status.stdout.contains("none yet"), "\(status.stdout)")

        let doctor = try asNobody(sandbox, "doctor", "--json")
        let report = try #require(JSONSerialization.jsonObject(with: Data(doctor.stdout.utf8)) as? [String: Any])
        let checks = try #require(report["checks"] as? [[String: Any]])
        let database = try #require(checks.first { $0["check"] as? String == "database" })
        #expect(database["ok"] as? Bool == false, "\(database)")
        #expect((database["detail"] as? String)?.contains("Permission denied") == true, "\(database)")
        #expect(doctor.status == 1)

        let check = try asNobody(sandbox, "check-update")
        #expect(check.status == 1, "\(check.stdout)\(check.stderr)")
        #expect(!check.stdout.contains("no update"), "\(check.stdout)")
        #expect(check.stderr.contains("Error: cannot tell whether an update applies: cannot read the state database"))
        let json = try asNobody(sandbox, "check-update", "--json")
        #expect(json.status == 1)
        let verdict = try #require(JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(verdict["result"] as? String == "unknown", "\(verdict)")
    }

    @Test(.enabled(if: getuid() == 0, "needs root to run the CLI as another user"))
    func aStateDirectoryThisUserCannotEnterIsNotAMissingDatabase() throws {
        let sandbox = try sandboxWithRequiredUpdate()
        chmod(sandbox.statePath, 0o700)
        try expectUnreadable(sandbox)
    }

    @Test(.enabled(if: getuid() == 0, "needs root to run the CLI as another user"))
    func aDatabaseFileThisUserCannotReadIsNotAMissingDatabase() throws {
        let sandbox = try sandboxWithRequiredUpdate()
        chmod(sandbox.statePath, 0o755)
        chmod(sandbox.databasePath, 0o600)
        // The reader file is what this user reads (SecurityReaderFileTests): closed too here.
        chmod(sandbox.statePath + "/reader.db", 0o600)
        try expectUnreadable(sandbox)
    }

    /// The other side of the line: no state directory at all is still "not created yet", no warning.
    @Test(.enabled(if: getuid() == 0, "needs root to run the CLI as another user"))
    func aMissingDatabaseStillServesTheDefaultsQuietly() throws {
        let sandbox = try Sandbox(defaults: #"{"linux_required_update": ""}"#, extraConfig: "[App]\nVersion=1.4.0")
        chmod(sandbox.root.path, 0o755)
        for path in [sandbox.configPath, sandbox.defaultsPath] { chmod(path, 0o644) }
        let check = try asNobody(sandbox, "check-update")
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        #expect(check.stderr.isEmpty, "\(check.stderr)")
        #expect(try asNobody(sandbox, "status").stdout.contains("none yet"))
    }
}
