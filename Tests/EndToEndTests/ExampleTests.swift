import Foundation
import Glibc
import RCCore
import RCSystem
import TestSupport
import Testing

/// examples/kiosk, run as a device would run it.
@Suite struct ExampleTests {
    static let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("examples/kiosk")

    func launch(_ sandbox: Sandbox) throws -> ProcessResult {
        try sandbox.run(
            "/bin/sh", [Self.examples.appendingPathComponent("kiosk-launch").path],
            environment: [
                "RCAGENT": Binaries.url("rcagent").path, "RCAGENT_CONFIG": sandbox.configPath,
                "KIOSK_BROWSER": "echo browser",
            ])
    }

    @Test func theKioskStartsOnTheRemoteURLAndObeysTheKillSwitch() throws {
        let sandbox = try Sandbox(defaults: #"{"kiosk_url": "https://example.com/default", "kiosk_enabled": "yes"}"#)
        #expect(try launch(sandbox).stdout == "browser --kiosk https://example.com/default\n", "works before any fetch")
        try sandbox.publish(Sandbox.document(version: 1, keys: 0, extra: ["kiosk_url": "https://example.com/remote"]))
        let daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--wait").status == 0)
        #expect(try launch(sandbox).stdout == "browser --kiosk https://example.com/remote\n")
        try sandbox.publish(
            Sandbox.document(
                version: 2, keys: 0, extra: ["kiosk_url": "https://example.com/remote", "kiosk_enabled": "off"]))
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        let disabled = try launch(sandbox)
        #expect(disabled.status == 0)
        #expect(disabled.stdout.contains("disabled by remote config"))
        daemon.stop()
    }

    @Test func theHookRestartsTheKioskOnlyWhenItsSettingsChange() throws {
        let sandbox = try Sandbox(defaults: #"{"kiosk_url": "https://example.com/default"}"#)
        let hooks = sandbox.root.appendingPathComponent("hooks")
        try FileManager.default.createDirectory(at: hooks, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            at: Self.examples.appendingPathComponent("hooks.d/50-restart-kiosk"),
            to: hooks.appendingPathComponent("50-restart-kiosk"))
        try sandbox.writeConfig(extra: "[Agent]\nHooksDirectory=\(hooks.path)")
        let restarts = sandbox.root.appendingPathComponent("restarts").path
        try sandbox.publish(Sandbox.document(version: 1, keys: 1))
        let daemon = try DaemonProcess(sandbox, environment: ["KIOSK_RESTART": "sh -c 'echo restarted >> \(restarts)'"])
        try daemon.waitUntilReady()
        #expect(try sandbox.cli("fetch", "--wait").status == 0)
        // Other keys changed: no restart. Then the URL changes: one restart.
        try sandbox.publish(Sandbox.document(version: 2, keys: 1, extra: ["kiosk_url": "https://example.com/new"]))
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        #expect(
            eventually { ((try? String(contentsOfFile: restarts, encoding: .utf8)) ?? "") == "restarted\n" },
            "\(daemon.log)")
        #expect(daemon.log.contains("hook 50-restart-kiosk: kiosk settings changed; restarting the kiosk"))
        daemon.stop()
    }

    /// The health check: a start page that loads keeps the values; one that does not rolls them
    /// back, and the hook restarts the kiosk on the old URL.
    @Test func theHealthCheckRollsBackAStartPageThatDoesNotLoad() throws {
        let sandbox = try Sandbox(defaults: #"{"kiosk_url": "https://example.com/default"}"#)
        let hooks = sandbox.root.appendingPathComponent("hooks")
        try FileManager.default.createDirectory(at: hooks, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            at: Self.examples.appendingPathComponent("hooks.d/50-restart-kiosk"),
            to: hooks.appendingPathComponent("50-restart-kiosk"))
        let check = Self.examples.appendingPathComponent("kiosk-health-check").path
        try sandbox.writeConfig(
            extra: "[Agent]\nHooksDirectory=\(hooks.path)\n[Activation]\nHealthCheck=\(check)\nHealthTimeout=30s")
        let page = sandbox.root.appendingPathComponent("page.html")
        try "<h1>welcome</h1>".write(to: page, atomically: true, encoding: .utf8)
        let restarts = sandbox.root.appendingPathComponent("restarts").path
        try sandbox.publish(Sandbox.document(version: 1, keys: 0, extra: ["kiosk_url": page.absoluteString]))
        let daemon = try DaemonProcess(
            sandbox,
            environment: [
                "KIOSK_RESTART": "sh -c 'echo restarted >> \(restarts)'", "RCAGENT": Binaries.url("rcagent").path,
                "RCAGENT_CONFIG": sandbox.configPath, "KIOSK_SETTLE": "0", "KIOSK_ATTEMPTS": "1",
                "KIOSK_RUNNING": "true",
            ])
        try daemon.waitUntilReady()
        #expect(try sandbox.cli("fetch", "--wait").status == 0)
        #expect(eventually { daemon.log.contains("Trial of template 1 passed its health check") }, "\(daemon.log)")

        let missing = sandbox.root.appendingPathComponent("missing.html").absoluteString
        try sandbox.publish(Sandbox.document(version: 2, keys: 0, extra: ["kiosk_url": missing]))
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        #expect(
            eventually { daemon.log.contains("Rolled back template 2 (health check failed (exit 2))") }, "\(daemon.log)"
        )
        #expect(try sandbox.cli("get", "kiosk_url").stdout == page.absoluteString + "\n")
        #expect(daemon.log.contains("health check: the start page does not load: \(missing)"))
        #expect(
            eventually {
                ((try? String(contentsOfFile: restarts, encoding: .utf8)) ?? "") == "restarted\nrestarted\nrestarted\n"
            },
            "started on v1, restarted on v2, back on v1: \(daemon.log)")
        daemon.stop()
    }

    /// `make run`'s config (issue 16): every path it names lies in the run directory. The built-in
    /// defaults point at /etc/rcagent: an example left on HooksDirectory's default would run the
    /// host's hooks.d as whoever ran make (root, often).
    @Test func makeRunsConfigKeepsEveryPathInsideTheRunDirectory() throws {
        let sandbox = try Sandbox()  // only for its directory, removed at the end
        let run = sandbox.root.appendingPathComponent("run").path
        let checkout = Self.examples.deletingLastPathComponent().deletingLastPathComponent().path
        let make = try runProcess("/usr/bin/make", ["-s", "-C", checkout, "run-config", "RUN_DIR=\(run)"])
        try #require(make.status == 0, "\(make.stdout)\(make.stderr)")
        let config = try AgentConfig.load(explicitPath: run + "/agent.conf")
        let paths: [(String, String?)] = [
            ("StateDirectory", config.stateDirectory), ("Socket", config.socket), ("Defaults", config.defaults),
            ("HooksDirectory", config.hooksDirectory), ("Path", config.sourcePath), ("CAFile", config.caFile),
            ("ClientCertificate", config.clientCertificate), ("ClientKey", config.clientKey),
            ("MQTTPasswordFile", config.mqttPasswordFile), ("MQTTCAFile", config.mqttCAFile),
            ("MQTTClientCertificate", config.mqttClientCertificate), ("MQTTClientKey", config.mqttClientKey),
            ("[Report] MQTTPasswordFile", config.reportPasswordFile), ("[Report] MQTTCAFile", config.reportCAFile),
            ("[Report] MQTTClientCertificate", config.reportClientCertificate),
            ("[Report] MQTTClientKey", config.reportClientKey),
        ]
        for case let (key, path?) in paths {
            #expect(path.hasPrefix(run + "/"), "\(key)=\(path) is outside \(run)")
        }
        #expect(config.files == [run + "/agent.conf"], "no drop-in from elsewhere")
        // What the config names exists, so `make run` starts on it as is.
        for file in [config.defaults, config.sourcePath ?? "", config.hooksDirectory] {
            #expect(FileManager.default.fileExists(atPath: file), "\(file)")
        }
    }
}
