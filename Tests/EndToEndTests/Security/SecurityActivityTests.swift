import Foundation
import Glibc
import TestSupport
import Testing

/// Live activities against a sender that wants to lock a device (issue 25, item 3), and stored texts
/// a sender sizes (item 4), through the built binaries: far-future starts cannot take the slots, the
/// device ends and removes activities on its own clock across a restart, `rcagent activity remove`
/// is for the owner only, and a huge `CONFIG_STATE` is kept cut.
@Suite(.serialized) struct SecurityActivityTests {
    /// `users` (gid 100): a group that exists on Debian, used as `SocketGroup=`.
    static let group = (name: "users", gid: UInt32(100))
    static let hour = 3_600

    static func now() -> Int { Int(Date().timeIntervalSince1970) }

    @Test func farFutureStartsAreRefusedAndARealStartWorksAfterwardsAcrossARestart() throws {
        let sandbox = try Sandbox()
        var daemon = try sandbox.startServing()
        // Year 9999, the lock-out as it was found: each start refused with why, none kept.
        for index in 0..<3 {
            let future = try sandbox.cli(
                "notify", ActivityTests.message("start", id: "future-\(index)", timestamp: 253_402_300_799))
            #expect(future.status == 1, "\(future.stdout)\(future.stderr)")
            #expect(future.stderr.contains("more than 24 h ahead of the device clock"), "\(future.stderr)")
        }
        // A day and a minute ahead is refused too; a day ahead is not (a sender's clock may be off).
        let dayAndMinute = try sandbox.cli(
            "notify", ActivityTests.message("start", id: "ahead", timestamp: Self.now() + 24 * Self.hour + 60))
        #expect(dayAndMinute.status == 1, "\(dayAndMinute.stderr)")
        #expect(daemon.log.contains("Refusing the start for activity future-0 from socket"), "\(daemon.log)")
        #expect(try ActivityTests.activities(sandbox).isEmpty)
        daemon.stop()
        daemon = try sandbox.startDaemon()
        let real = try sandbox.cli("notify", ActivityTests.message("start", id: "real", timestamp: Self.now()))
        #expect(real.status == 0, "\(real.stderr)\n\(daemon.log)")
        #expect(try ActivityTests.activities(sandbox).map { $0["id"] as? String } == ["real"])
        daemon.stop()
    }

    /// The same through a real mosquitto: a far-future start retained on the device's topic (delivered
    /// again at every connect) and a burst of them on the fleet's are refused and logged at each start;
    /// a real start over MQTT is applied after a restart.
    @Test func retainedFarFutureStartsOverMQTTLockNothingAcrossRestarts() throws {
        let (sandbox, server, broker) = try MQTTTests().setUp()
        try server.serve(Sandbox.document(version: 1), etag: "\"v1\"")
        var daemon = try sandbox.startDaemon()
        #expect(eventually { daemon.log.contains("MQTT connected") }, "\(daemon.log)")
        let deviceId = try #require(
            ActivityTests.json(try sandbox.cli("status", "--json").stdout)?["deviceId"] as? String)
        try broker.publish(
            ActivityTests.message("start", id: "retained", timestamp: 253_402_300_799), topic: "PUSH_RC/\(deviceId)",
            retain: true)
        for index in 0..<20 {
            try broker.publish(
                ActivityTests.message("start", id: "burst-\(index)", timestamp: 253_402_300_799), topic: "PUSH_RC")
        }
        #expect(
            eventually { daemon.log.contains("Refusing the start for activity burst-19 from mqtt PUSH_RC") },
            "\(daemon.log)")
        #expect(daemon.log.contains("more than 24 h ahead of the device clock"))
        #expect(try ActivityTests.activities(sandbox).isEmpty)
        #expect(daemon.stop() == 0)

        daemon = try sandbox.startDaemon()
        #expect(
            eventually {
                daemon.log.contains("Refusing the start for activity retained from mqtt PUSH_RC/\(deviceId)")
            },
            "the retained start comes again, and is refused again: \(daemon.log)")
        try broker.publish(ActivityTests.message("start", id: "real", timestamp: Self.now()), topic: "PUSH_RC")
        #expect(
            try eventually { try ActivityTests.activities(sandbox).map { $0["id"] as? String } == ["real"] },
            "\(daemon.log)")
        #expect(daemon.stop() == 0)
    }

    /// Two activities started while the daemon's clock (libfaketime) read 13 h and 9 h ago; the daemon
    /// is then restarted on the real clock. From the store alone, at start, it removes the first (ended
    /// at its 8 h mark, its 4 h over) and ends the second as if an end had come at its 8 h mark.
    @Test func anActivityOlderThanEightHoursIsEndedAndOneOlderThanTwelveRemovedAfterARestart() throws {
        let sandbox = try Sandbox()
        try sandbox.publish(Sandbox.document(version: 1))
        let offsetFile = sandbox.root.appendingPathComponent("faketime").path
        try "-\(13 * Self.hour)".write(toFile: offsetFile, atomically: true, encoding: .utf8)
        let shifted = try DaemonProcess(
            sandbox, arguments: [],
            environment: [
                "RCAGENT_CONFIG": sandbox.configPath, "LD_PRELOAD": FakedClock.library,
                "FAKETIME_TIMESTAMP_FILE": offsetFile,
                "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            ])
        try shifted.waitUntilReady()
        let t0 = Self.now()
        #expect(try sandbox.cli("notify", ActivityTests.message("start", id: "old", timestamp: t0)).status == 0)
        try "-\(9 * Self.hour)".write(toFile: offsetFile, atomically: true, encoding: .utf8)
        #expect(try sandbox.cli("notify", ActivityTests.message("start", id: "older", timestamp: t0 + 1)).status == 0)
        let before = try ActivityTests.activities(sandbox)
        #expect(before.map { $0["state"] as? String } == ["active", "active"], "\(before)\n\(shifted.log)")
        #expect(shifted.stop() == 0)

        let daemon = try sandbox.startDaemon()
        #expect(
            eventually { (try? ActivityTests.activities(sandbox).map { $0["id"] as? String }) == ["older"] },
            "\(daemon.log)")
        let ended = try #require(try ActivityTests.activities(sandbox).first)
        #expect(ended["state"] as? String == "ended")
        let startedAt = try #require((ended["startedAt"] as? String).flatMap(ISO8601DateFormatter().date(from:)))
        let endedAt = try #require((ended["endedAt"] as? String).flatMap(ISO8601DateFormatter().date(from:)))
        let dismissAt = try #require((ended["dismissAt"] as? String).flatMap(ISO8601DateFormatter().date(from:)))
        #expect(endedAt.timeIntervalSince(startedAt) == TimeInterval(8 * Self.hour))
        #expect(dismissAt.timeIntervalSince(endedAt) == TimeInterval(4 * Self.hour))
        // The store's change is committed before the daemon writes its log line: wait for the line.
        #expect(eventually { daemon.log.contains("Live activity old removed") }, "\(daemon.log)")
        #expect(eventually { daemon.log.contains("Live activity older ended (8 h after its start)") }, "\(daemon.log)")
        let history = try sandbox.cli("activity", "list")
        #expect(history.stdout.hasPrefix("older ended"), "\(history.stdout)")
        daemon.stop()
    }

    /// `activity remove` changes state: root and a `SocketGroup` member may, another user may not.
    @Test(.enabled(if: getuid() == 0, "needs root to run a client as another user"))
    func activityRemoveIsForTheOwnerAndRefusedForANonMember() throws {
        let sandbox = try Sandbox()
        try sandbox.publish(Sandbox.document(version: 1))
        try sandbox.writeConfig(extra: "[Agent]\nSocketGroup=\(Self.group.name)")
        chmod(sandbox.root.path, 0o755)
        chmod(sandbox.configPath, 0o644)
        let daemon = try sandbox.startDaemon()
        for id in ["a", "b", "c"] {
            #expect(
                try sandbox.cli("notify", ActivityTests.message("start", id: id, timestamp: Self.now())).status == 0)
        }
        let watcher = try SocketClient(path: sandbox.socketPath)
        #expect(watcher.watch())

        let outsider = try asNobody(sandbox, groups: [], "activity", "remove", "a")
        #expect(outsider.status == 69, "\(outsider.stdout)\(outsider.stderr)")
        #expect(outsider.stderr.contains("not allowed to talk to the daemon"), "\(outsider.stderr)")
        // A peer that reaches the socket (its mode opened up here) but is no member is refused by the
        // daemon itself, by the connection's credentials: the op changes state.
        chmod(sandbox.socketPath, 0o666)
        let refused = try asNobody(sandbox, groups: [], "activity", "remove", "a")
        #expect(refused.status == 1, "\(refused.stdout)\(refused.stderr)")
        #expect(refused.stderr.contains("uid 65534 may not change the agent's state"), "\(refused.stderr)")
        chmod(sandbox.socketPath, 0o660)
        #expect(try ActivityTests.activities(sandbox).count == 3)

        let owner = try sandbox.cli("activity", "remove", "a")
        #expect(owner.status == 0, "\(owner.stderr)\n\(daemon.log)")
        #expect(owner.stdout == "activity a removed\n")
        let event = watcher.event { $0["event"] as? String == "activity-removed" }
        #expect(event?["id"] as? String == "a")
        #expect(event?["reason"] as? String == "removed on request")
        let member = try asNobody(sandbox, groups: [Self.group.gid], "activity", "remove", "b", "--json")
        #expect(member.status == 0, "\(member.stderr)")
        #expect(member.stdout.contains(#""removed":"b""#), "\(member.stdout)")
        #expect(try ActivityTests.activities(sandbox).map { $0["id"] as? String } == ["c"])

        let missing = try sandbox.cli("activity", "remove", "a")
        #expect(missing.status == 1 && missing.stderr == "Error: no activity \"a\"\n", "\(missing.stderr)")
        let usage = try sandbox.cli("activity", "remove")
        #expect(usage.status == 64, "\(usage.stderr)")
        daemon.stop()
        #expect(try sandbox.cli("activity", "remove", "c").status == 69)
    }

    /// A `CONFIG_STATE` as long as a socket line may be (64 KiB) sets the stale flag with a reason
    /// cut to 256 bytes, in status and in the `stale-set` event; and `mark-stale --reason` with the
    /// daemon down (the CLI writes the database itself) is cut the same.
    @Test func aHugeConfigStateIsKeptCutInStatusAndInTheEvent() throws {
        let sandbox = try Sandbox()
        let daemon = try sandbox.startServing()
        let watcher = try SocketClient(path: sandbox.socketPath)
        #expect(watcher.watch())
        // The fetch the message asks for fails: the flag, and its reason, stay for status to show.
        try sandbox.publish("not a document")
        let huge = String(repeating: "é", count: 30_000)
        let notify = try sandbox.cli("notify", #"{"data":{"CONFIG_STATE":"\#(huge)"}}"#)
        #expect(notify.status == 0, "\(notify.stderr)")
        let event = try #require(watcher.event { $0["event"] as? String == "stale-set" })
        let reason = try #require(event["reason"] as? String)
        #expect(reason.utf8.count <= 256 && reason.hasPrefix("socket: CONFIG_STATE=éé") && reason.hasSuffix("…"))
        #expect(try staleReason(sandbox) == reason)
        daemon.stop()

        let fresh = try Sandbox()
        try fresh.publish(Sandbox.document(version: 1))
        let long = String(repeating: "r", count: 100_000)
        #expect(try fresh.cli("mark-stale", "--reason", long).status == 0)
        let kept = try #require(try staleReason(fresh))
        #expect(kept.utf8.count <= 256 && kept.hasPrefix("rrr") && kept.hasSuffix("…"))
    }
}
