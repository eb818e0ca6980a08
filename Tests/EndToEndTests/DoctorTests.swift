import Foundation
import Glibc
import TestSupport
import Testing

/// `rcagent doctor`: one line per check; exit 0 only when every check passes.
@Suite struct DoctorTests {
    func sandbox() throws -> (Sandbox, URL) {
        let sandbox = try Sandbox()
        let hooks = sandbox.root.appendingPathComponent("hooks")
        try FileManager.default.createDirectory(at: hooks, withIntermediateDirectories: true)
        try sandbox.writeConfig(extra: "[Agent]\nHooksDirectory=\(hooks.path)")
        try sandbox.publish(Sandbox.document(version: 1))
        return (sandbox, hooks)
    }

    func failing(_ result: ProcessResult) -> [String] {
        result.stdout.split(separator: "\n").filter { $0.hasPrefix("FAIL") }.map {
            String($0.dropFirst(6).prefix { $0 != " " })
        }
    }

    @Test func aHealthyDevicePassesEveryCheck() throws {
        let (sandbox, hooks) = try sandbox()
        try "#!/bin/sh\n".write(to: hooks.appendingPathComponent("10-ok"), atomically: true, encoding: .utf8)
        chmod(hooks.appendingPathComponent("10-ok").path, 0o755)
        let daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--wait").status == 0)
        let result = try sandbox.cli("doctor")
        #expect(result.status == 0, "\(result.stdout)")
        let names = result.stdout.split(separator: "\n").map { String($0.dropFirst(6).prefix { $0 != " " }) }
        #expect(
            names == [
                "config", "database", "socket", "daemon", "clock", "source", "libraries", "fetch", "activation",
                "hooks",
            ])
        let json = try #require(
            JSONSerialization.jsonObject(with: Data(try sandbox.cli("doctor", "--json").stdout.utf8)) as? [String: Any])
        #expect(json["ok"] as? Bool == true)
        daemon.stop()
    }

    /// Hooks are optional: a hooks directory that does not exist is healthy, and said so; a
    /// non-executable file alone does not fail a healthy device (issue 16).
    @Test func hooksThatDoNotRunWarnOrSaySoWithoutFailing() throws {
        let (sandbox, hooks) = try sandbox()
        let daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--wait").status == 0)
        try FileManager.default.removeItem(at: hooks)
        var result = try sandbox.cli("doctor")
        #expect(result.status == 0, "\(result.stdout)")
        #expect(
            result.stdout.contains("ok    hooks      \(hooks.path) does not exist: no hooks run\n"), "\(result.stdout)")

        try FileManager.default.createDirectory(at: hooks, withIntermediateDirectories: true)
        try "#!/bin/sh\n".write(to: hooks.appendingPathComponent("10-on"), atomically: true, encoding: .utf8)
        chmod(hooks.appendingPathComponent("10-on").path, 0o755)
        try "#!/bin/sh\n".write(to: hooks.appendingPathComponent("20-off"), atomically: true, encoding: .utf8)
        try "#!/bin/sh\n".write(to: hooks.appendingPathComponent("30-on.dpkg-old"), atomically: true, encoding: .utf8)
        result = try sandbox.cli("doctor")
        #expect(result.status == 0, "\(result.stdout)")
        #expect(
            result.stdout.contains("warn  hooks      10-on; not executable, so skipped: 20-off\n"), "\(result.stdout)")
        let json = try #require(
            JSONSerialization.jsonObject(with: Data(try sandbox.cli("doctor", "--json").stdout.utf8)) as? [String: Any])
        #expect(json["ok"] as? Bool == true)
        let checks = try #require(json["checks"] as? [[String: Any]])
        #expect(checks.last?["check"] as? String == "hooks")
        #expect(checks.last?["warning"] as? Bool == true)
        daemon.stop()
    }

    @Test func eachBrokenConditionFails() throws {
        let (sandbox, hooks) = try sandbox()
        let daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--wait").status == 0)
        #expect(daemon.stop() == 0)

        // Daemon down.
        var result = try sandbox.cli("doctor")
        #expect(result.status == 1)
        #expect(failing(result) == ["socket", "daemon"], "\(result.stdout)")

        // A missing source file fails; a hook that is not executable only warns (the daemon skips
        // it, as run-parts does: that is how a hook is switched off).
        try "#!/bin/sh\n".write(to: hooks.appendingPathComponent("20-forgot-chmod"), atomically: true, encoding: .utf8)
        try FileManager.default.removeItem(atPath: sandbox.remotePath)
        result = try sandbox.cli("doctor")
        #expect(failing(result) == ["socket", "daemon", "source"], "\(result.stdout)")
        #expect(
            result.stdout.contains(
                "warn  hooks      none in \(hooks.path); not executable, so skipped: 20-forgot-chmod\n"))

        // The clock went back behind the last successful fetch.
        let sqlite = Process()
        sqlite.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        sqlite.arguments = [sandbox.databasePath, "UPDATE fetch_state SET last_success_at = 4102444800000"]
        try sqlite.run()
        sqlite.waitUntilExit()
        result = try sandbox.cli("doctor")
        #expect(failing(result).contains("clock"), "\(result.stdout)")

        // A damaged database.
        try Data(repeating: 0x5a, count: 8192).write(to: URL(fileURLWithPath: sandbox.databasePath))
        result = try sandbox.cli("doctor")
        #expect(failing(result).contains("database"), "\(result.stdout)")

        // An unreachable http source; and finally a config that does not parse.
        try sandbox.writeConfig(
            extra: "[Source]\nType=http\nURL=http://127.0.0.1:\(try MosquittoBroker.freePort())/c.json")
        result = try sandbox.cli("doctor")
        #expect(failing(result).contains("source"), "\(result.stdout)")
        try sandbox.writeConfig(extra: "[Agent]\nActivation=sometimes")
        result = try sandbox.cli("doctor")
        #expect(result.status == 1)
        #expect(failing(result) == ["config"], "\(result.stdout)")
    }
}
