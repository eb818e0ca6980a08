import Foundation
import Glibc
import TestSupport
import Testing

/// Many reloads in a row leave the daemon with the threads and descriptors it had: each replaced
/// service (MQTT channel, network watch, inotify watch) releases what it held.
@Suite struct ReloadLeakTests {
    func counts(_ pid: Int32) -> (threads: Int, fds: Int) {
        let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").count) ?? -1
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
        return (threads, fds)
    }

    /// Once what the last reload started has settled (the CLI's connection, a fetch a new channel's
    /// connect asked for), the daemon has no more descriptors and threads than `before`: a leak
    /// never settles.
    func expectNoLeak(_ pid: Int32, since before: (threads: Int, fds: Int)) {
        var after = counts(pid)
        #expect(
            eventually {
                after = counts(pid)
                return after.fds <= before.fds && after.threads <= before.threads + 2
            }, "descriptors \(before.fds) -> \(after.fds), threads \(before.threads) -> \(after.threads)")
    }

    /// Twenty reloads that each replace the MQTT channel and the network watch leave the daemon
    /// with the threads and descriptors it had after the first.
    @Test func twentyReloadsLeakNoThreadOrDescriptor() throws {
        let (sandbox, server, broker) = try MQTTTests().setUp()
        let daemon = try MQTTTests().startConnected(sandbox, server)
        let pid = daemon.process.processIdentifier
        func reload(to topic: String, _ round: Int) throws {
            try ReloadTests().dropIn(sandbox, "10-topic.conf", "[Push]\nMQTTTopic=\(topic)\n")
            let result = try sandbox.cli("reload")
            #expect(result.status == 0, "\(result.stderr)")
            #expect(eventually { daemon.log.components(separatedBy: "subscribed to \(topic),").count > round })
        }
        try reload(to: "T0", 1)
        let before = counts(pid)
        for round in 1...20 { try reload(to: "T\(round % 2 == 0 ? 0 : 1)", round / 2 + 1) }
        expectNoLeak(pid, since: before)
        #expect(daemon.stop() == 0)
        withExtendedLifetime(broker) {}
    }
}

extension ReloadLeakTests {
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
            try ReloadTests().dropIn(sandbox, "10-path.conf", "[Source]\nPath=\(paths[round % 2])\n")
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
        expectNoLeak(pid, since: before)
        // Still watching the file it serves now (the last reload chose the sandbox's own path).
        try sandbox.publish(Sandbox.document(version: 9))
        #expect(try eventually { try sandbox.cli("get", "key_0").stdout == "v9\n" }, "\(daemon.log)")
        #expect(daemon.stop() == 0)
    }
}
