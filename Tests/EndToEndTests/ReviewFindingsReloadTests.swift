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

extension ReviewFindingsReloadTests {
    func counts(_ pid: Int32) -> (threads: Int, fds: Int) {
        let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").count) ?? -1
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
        return (threads, fds)
    }

    /// Twenty reloads that each replace the MQTT channel and the network watch leave the daemon
    /// with the threads and descriptors it had after the first.
    @Test func twentyReloadsLeakNoThreadOrDescriptor() throws {
        let (sandbox, server, broker) = try MQTTTests().setUp()
        let daemon = try MQTTTests().startConnected(sandbox, server)
        let pid = daemon.process.processIdentifier
        func reload(to topic: String, _ round: Int) throws {
            try dropIn(sandbox, "10-topic.conf", "[Push]\nMQTTTopic=\(topic)\n")
            let result = try sandbox.cli("reload")
            #expect(result.status == 0, "\(result.stderr)")
            #expect(eventually { daemon.log.components(separatedBy: "subscribed to \(topic),").count > round })
        }
        try reload(to: "T0", 1)
        let before = counts(pid)
        for round in 1...20 { try reload(to: "T\(round % 2 == 0 ? 0 : 1)", round / 2 + 1) }
        let after = counts(pid)
        #expect(after.fds <= before.fds, "descriptors \(before.fds) -> \(after.fds)")
        #expect(after.threads <= before.threads + 2, "threads \(before.threads) -> \(after.threads)")
        #expect(daemon.stop() == 0)
        withExtendedLifetime(broker) {}
    }
}

extension ReviewFindingsReloadTests {
    /// The same with a file source whose path alternates (each reload replaces its inotify watch),
    /// with a burst of SIGHUPs at the end; the daemon still serves and stops cleanly.
    @Test func twentyFileSourceReloadsAndASIGHUPBurstLeakNothing() throws {
        let sandbox = try Sandbox()
        let daemon = try sandbox.startServing(version: 1)
        let pid = daemon.process.processIdentifier
        let other = sandbox.remotePath + ".other"
        try Sandbox.document(version: 7).write(toFile: other, atomically: true, encoding: .utf8)
        let paths = [other, sandbox.remotePath]
        func reload(_ round: Int) throws {
            try dropIn(sandbox, "10-path.conf", "[Source]\nPath=\(paths[round % 2])\n")
            let result = try sandbox.cli("reload")
            #expect(result.status == 0, "\(result.stderr)")
            let want = round % 2 == 0 ? "v7\n" : "v1\n"
            #expect(try eventually { try sandbox.cli("get", "key_0").stdout == want }, "\(daemon.log)")
        }
        try reload(0)
        try reload(1)
        let before = counts(pid)
        for round in 2..<22 { try reload(round) }
        for _ in 0..<50 { kill(pid, SIGHUP) }
        #expect(try sandbox.cli("reload").status == 0)
        let after = counts(pid)
        #expect(after.fds <= before.fds, "descriptors \(before.fds) -> \(after.fds)")
        #expect(after.threads <= before.threads + 2, "threads \(before.threads) -> \(after.threads)")
        // Still watching the file it serves now (the last reload chose the sandbox's own path).
        try sandbox.publish(Sandbox.document(version: 9))
        #expect(try eventually { try sandbox.cli("get", "key_0").stdout == "v9\n" }, "\(daemon.log)")
        #expect(daemon.stop() == 0)
    }
}

extension ReviewFindingsReloadTests {
    /// REVIEW FINDING 3 (failed until the fix): after a reload that changes a restart-only setting,
    /// the daemon reported the digest of the files, not of the config it runs, so `doctor` passed
    /// while the daemon wrote one StateDirectory and `rcagent get` read another.
    @Test func doctorFailsWhileARestartOnlySettingWaitsForARestart() throws {
        let sandbox = try Sandbox()
        let daemon = try sandbox.startServing(version: 1)
        let elsewhere = sandbox.root.appendingPathComponent("elsewhere").path
        try dropIn(sandbox, "10-state.conf", "[Agent]\nStateDirectory=\(elsewhere)\n")
        let reload = try sandbox.cli("reload")
        #expect(reload.status == 0, "\(reload.stderr)")
        #expect(reload.stdout.contains("Agent.StateDirectory"), "\(reload.stdout)")
        // The daemon still serves the old state; the CLI, reading the files, looks elsewhere.
        #expect(try sandbox.cli("get", "key_0").stdout != "v1\n")
        let doctor = try sandbox.cli("doctor")
        #expect(doctor.status == 1, "\(doctor.stdout)")
        #expect(doctor.stdout.contains("restart"), "\(doctor.stdout)")
        #expect(daemon.stop() == 0)
    }
}
