import Foundation
import Glibc
import RCCore
import RCStore
import TestSupport
import Testing

/// `rcagent doctor` (issue 29 item 3, issue 27): a failing last fetch is a FAIL showing its error,
/// a library a configured feature needs that cannot be loaded is a FAIL naming both, and a pending
/// trial, a rollback and rejected versions are said, all with the built binaries.
@Suite struct DoctorFindingsTests {
    func line(_ result: ProcessResult, _ name: String) -> String? {
        result.stdout.split(separator: "\n").map(String.init).first { $0.dropFirst(6).hasPrefix(name + " ") }
    }

    @Test func aFailingLastFetchFailsWithItsError() throws {
        let sandbox = try Sandbox()
        try sandbox.writeConfig()
        try sandbox.publish(Sandbox.document(version: 1))
        let daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--wait").status == 0)
        var result = try sandbox.cli("doctor")
        #expect(result.status == 0, "\(result.stdout)")
        #expect(line(result, "fetch")?.hasPrefix("ok    fetch      success at ") == true, "\(result.stdout)")

        // The source file is there and readable (the source check passes), but not a document.
        try sandbox.publish("{\"entries\": \u{1b}[31mbroken")
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 1)
        result = try sandbox.cli("doctor")
        #expect(result.status == 1, "\(result.stdout)")
        let fetch = try #require(line(result, "fetch"), "\(result.stdout)")
        #expect(fetch.hasPrefix("FAIL  fetch      the last fetch failed at "), "\(fetch)")
        #expect(fetch.contains("JSON") || fetch.contains("json"), "the error is shown: \(fetch)")
        #expect(!result.stdout.contains("\u{1b}"), "escaped")
        #expect(line(result, "source")?.hasPrefix("ok") == true, "\(result.stdout)")
        let json = try #require(
            JSONSerialization.jsonObject(with: Data(try sandbox.cli("doctor", "--json").stdout.utf8)) as? [String: Any])
        let checks = try #require(json["checks"] as? [[String: Any]])
        #expect(checks.contains { $0["check"] as? String == "fetch" && $0["ok"] as? Bool == false })

        // Fixed: the next fetch passes, and so does doctor.
        try sandbox.publish(Sandbox.document(version: 2))
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        result = try sandbox.cli("doctor")
        #expect(result.status == 0, "\(result.stdout)")
        #expect(daemon.stop() == 0)
    }

    /// The loader's search path puts a broken `libmosquitto.so.1` first (as a damaged or foreign
    /// library would be): doctor loads it as the daemon would and fails, naming feature and reason.
    @Test func aLibraryAConfiguredFeatureNeedsMustLoad() throws {
        let sandbox = try Sandbox()
        try sandbox.writeConfig(extra: "[Push]\nMQTT=mqtt://127.0.0.1:1\n")
        let good = try sandbox.run("rcagent", ["doctor", "--config", sandbox.configPath])
        #expect(line(good, "libraries") == "ok    libraries  libmosquitto.so.1 (MQTT)", "\(good.stdout)")

        let broken = sandbox.root.appendingPathComponent("broken-libs")
        try FileManager.default.createDirectory(at: broken, withIntermediateDirectories: true)
        try sandbox.write("not a library\n", to: broken.appendingPathComponent("libmosquitto.so.1").path)
        let result = try sandbox.run(
            "rcagent", ["doctor", "--config", sandbox.configPath], environment: ["LD_LIBRARY_PATH": broken.path])
        #expect(result.status == 1)
        let libraries = try #require(line(result, "libraries"), "\(result.stdout)")
        #expect(
            libraries.hasPrefix(
                "FAIL  libraries  MQTT needs libmosquitto.so.1, which cannot be loaded (apt install libmosquitto1): "),
            "\(libraries)")

        // A file source without MQTT or TrustedKeys needs none.
        try sandbox.writeConfig()
        let plain = try sandbox.cli("doctor")
        #expect(line(plain, "libraries") == "ok    libraries  none needed by this config", "\(plain.stdout)")
    }

    /// The store as the daemon leaves it: a rolled-back trial (its version rejected), then a trial
    /// whose health check has not answered. doctor reads it and changes nothing.
    @Test func trialsRollbacksAndRejectedVersionsAreSaid() throws {
        let sandbox = try Sandbox()
        try sandbox.writeConfig()
        try sandbox.publish(Sandbox.document(version: 1))
        try FileManager.default.createDirectory(atPath: sandbox.statePath, withIntermediateDirectories: true)
        let now = Timestamp.now()
        do {
            let store = try StateStore.openForWriting(path: sandbox.databasePath)
            for (version, at) in [("41", now + .seconds(-300)), ("42", now + .seconds(-200))] {
                try store.recordFetch(
                    .update(values: ["url": "v\(version)"], templateVersion: version, etag: nil), at: at,
                    activate: false)
                try store.activateRecorded(at: at, keep: 20, trialDeadline: version == "42" ? at + .seconds(60) : nil)
            }
            _ = try store.rollBackTrial(.healthCheckFailed(exitCode: 3), at: now + .seconds(-150))
        }
        var result = try sandbox.cli("doctor")
        var activation = try #require(line(result, "activation"), "\(result.stdout)")
        #expect(
            activation.hasPrefix("warn  activation last rollback: version 42 at "), "\(activation)")
        #expect(
            activation.hasSuffix(
                " (health check failed (exit 3)); rejected versions (never activated again here): 42 (see rcagent history)"
            ),
            "\(activation)")
        #expect(line(result, "trial") == nil, "no trial pending: \(result.stdout)")
        #expect(line(result, "deferred") == nil, "nothing waits: \(result.stdout)")

        // A deferred activation is a warning naming the version, until when and why.
        do {
            let store = try StateStore.openForWriting(path: sandbox.databasePath)
            try store.setDeferredActivation(
                DeferredActivation(templateVersion: "43", since: now, until: now + .seconds(3_600), why: .window),
                announce: false, at: now)
        }
        result = try sandbox.cli("doctor")
        let deferred = try #require(line(result, "deferred"), "\(result.stdout)")
        #expect(deferred.hasPrefix("warn  deferred   template 43 waits until "), "\(deferred)")
        #expect(
            deferred.hasSuffix(
                "(outside every maintenance window), since \(now.iso8601); rcagent activate --now overrides"),
            "\(deferred)")
        do {
            let store = try StateStore.openForWriting(path: sandbox.databasePath)
            try store.setDeferredActivation(nil, announce: false, at: now)
        }

        // A trial under way: a warning while its deadline lies ahead, a FAIL once it passed unanswered.
        do {
            let store = try StateStore.openForWriting(path: sandbox.databasePath)
            try store.recordFetch(
                .update(values: ["url": "v43"], templateVersion: "43", etag: nil), at: now, activate: false)
            try store.activateRecorded(at: now, keep: 20, trialDeadline: now + .seconds(600))
        }
        result = try sandbox.cli("doctor")
        let trial = try #require(line(result, "trial"), "\(result.stdout)")
        #expect(trial.hasPrefix("warn  trial      version 43 on trial since "), "\(trial)")
        #expect(trial.contains("; the health check decides by "), "\(trial)")
        do {
            let store = try StateStore.openForWriting(path: sandbox.databasePath)
            try store.commitTrial(at: now)
            try store.recordFetch(
                .update(values: ["url": "v44"], templateVersion: "44", etag: nil), at: now, activate: false)
            try store.activateRecorded(at: now + .seconds(-600), keep: 20, trialDeadline: now + .seconds(-120))
        }
        result = try sandbox.cli("doctor")
        #expect(result.status == 1)
        let stuck = try #require(line(result, "trial"), "\(result.stdout)")
        #expect(stuck.hasPrefix("FAIL  trial      version 44 on trial since "), "\(stuck)")
        #expect(stuck.contains("nothing decided (is the daemon running?"), "\(stuck)")
        // Read-only: the trial is still pending after doctor ran.
        activation = try #require(line(try sandbox.cli("doctor"), "trial"))
        #expect(activation.hasPrefix("FAIL  trial      version 44"))
    }

    /// A user outside `SocketGroup=`: both lines fail, and the socket's says how to join the group.
    @Test(.enabled(if: getuid() == 0, "needs root to run doctor as another user"))
    func aUserOutsideTheSocketGroupIsToldHowToJoinIt() throws {
        let sandbox = try Sandbox()
        try sandbox.writeConfig(extra: "[Agent]\nSocketGroup=daemon\n")
        try sandbox.publish(Sandbox.document(version: 1))
        chmod(sandbox.root.path, 0o755)
        for path in [sandbox.configPath, sandbox.defaultsPath] { chmod(path, 0o644) }
        let daemon = try sandbox.startDaemon()
        let result = try sandbox.run(
            "/usr/bin/setpriv",
            [
                "--reuid=65534", "--regid=65534", "--clear-groups", Binaries.url("rcagent").path, "doctor",
                "--config", sandbox.configPath,
            ])
        #expect(result.status == 1)
        let socket = try #require(line(result, "socket"), "\(result.stdout)")
        #expect(socket.contains("this user may not talk to the daemon; add this user to its group (as root: adduser "))
        #expect(socket.hasSuffix(" daemon; then log in again)"), "\(socket)")
        #expect(
            line(result, "daemon") == "FAIL  daemon     not reachable by this user (the socket refuses it)",
            "\(result.stdout)")
        #expect(daemon.stop() == 0)
    }

    /// The daemon with the same broken library: its error names the library, with no TLS settings
    /// in front of it (issue 29 item 5).
    @Test func theDaemonSaysWhichLibraryMQTTLacks() throws {
        let sandbox = try Sandbox()
        try sandbox.writeConfig(extra: "[Push]\nMQTT=mqtt://127.0.0.1:1\n")
        let broken = sandbox.root.appendingPathComponent("broken-libs")
        try FileManager.default.createDirectory(at: broken, withIntermediateDirectories: true)
        try sandbox.write("not a library\n", to: broken.appendingPathComponent("libmosquitto.so.1").path)
        let daemon = try DaemonProcess(sandbox, environment: ["LD_LIBRARY_PATH": broken.path])
        #expect(
            eventually(60) { daemon.log.contains("cannot set up MQTT: MQTT needs libmosquitto.so.1") }, "\(daemon.log)")
        #expect(!daemon.log.contains("MQTTCAFile="), "\(daemon.log)")
        daemon.stop()
    }
}
