import Foundation
import Glibc
import TestSupport
import Testing

/// Live Activities end to end: FCM v1 start/update/end messages into the built rcagentd (over the
/// socket with `rcagent notify`, the raw socket and a real mosquitto), read back with
/// `rcagent activity list|show|watch`, through restarts, kill -9 and hooks.
@Suite struct ActivityTests {
    /// Seconds for message timestamps: the messages' own clock, independent of the machine's.
    static let t0 = 1_700_000_000

    /// An FCM v1 Live Activity message; `aps` adds members to `apns.payload.aps` (JSON text).
    static func message(
        _ event: String, id: String = "order-42", timestamp: Int, content: String? = #"{"eta":10}"#,
        aps: String = "", data: String? = nil
    ) -> String {
        var members = [#""event":"\#(event)""#, #""timestamp":\#(timestamp)"#]
        if let content { members.append(#""content-state":\#(content)"#) }
        if event == "start" {
            members.append(#""attributes-type":"DeliveryAttributes","attributes":{"order":42}"#)
        }
        if !aps.isEmpty { members.append(aps) }
        let dataPart = data.map { #","data":\#($0)"# } ?? ""
        return #"{"message":{"token":"fcm-token","apns":{"live_activity_token":"\#(id)","#
            + #""headers":{"apns-priority":"10"},"payload":{"aps":{\#(members.joined(separator: ","))}}}\#(dataPart)}}"#
    }

    static func json(_ text: String) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
    }

    static func activities(_ sandbox: Sandbox) throws -> [[String: Any]] {
        let result = try sandbox.cli("activity", "list", "--json")
        return (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]]) ?? []
    }

    static func iso(_ seconds: Int) -> String {
        let formatter = ISO8601DateFormatter()
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    @Test func startUpdateEndOverTheSocketAndListedAsTheSpecSays() throws {
        let sandbox = try Sandbox()
        let daemon = try sandbox.startServing()

        let started = try sandbox.cli(
            "notify", "--json",
            Self.message("start", timestamp: Self.t0, aps: #""alert":{"title":"Order 42","body":"Preparing"}"#))
        #expect(started.status == 0, "\(started.stderr)\n\(daemon.log)")
        let answer = try #require(Self.json(started.stdout)?["activity"] as? [String: Any])
        #expect(answer["outcome"] as? String == "started")
        #expect(answer["id"] as? String == "order-42")

        let list = try Self.activities(sandbox)
        #expect(list.count == 1)
        let item = try #require(list.first)
        #expect(
            Set(item.keys) == [
                "id", "state", "attributesType", "attributes", "contentState", "alert", "timestamp", "startedAt",
                "updatedAt", "endedAt", "staleAt", "dismissAt",
            ])
        #expect(item["id"] as? String == "order-42")
        #expect(item["state"] as? String == "active")
        #expect(item["attributesType"] as? String == "DeliveryAttributes")
        #expect((item["attributes"] as? [String: Any])?["order"] as? Int == 42)
        #expect((item["contentState"] as? [String: Any])?["eta"] as? Int == 10)
        #expect((item["alert"] as? [String: Any])?["title"] as? String == "Order 42")
        #expect((item["alert"] as? [String: Any])?["body"] as? String == "Preparing")
        #expect(item["timestamp"] as? Int == Self.t0)
        #expect((item["startedAt"] as? String)?.hasSuffix("Z") == true)
        #expect(item["endedAt"] is NSNull && item["staleAt"] is NSNull && item["dismissAt"] is NSNull)
        // show --json prints exactly the list's item.
        let show = try sandbox.cli("activity", "show", "order-42", "--json")
        #expect(show.status == 0)
        #expect(
            show.stdout.trimmingCharacters(in: .newlines)
                == (try sandbox.cli("activity", "list", "--json").stdout.trimmingCharacters(in: .newlines)
                    .dropFirst().dropLast()))

        let updated = try sandbox.cli(
            "notify", Self.message("update", timestamp: Self.t0 + 5, content: #"{"eta":3}"#))
        #expect(updated.status == 0, "\(updated.stderr)")
        #expect(updated.stdout.hasPrefix("activity updated: order-42 active DeliveryAttributes {\"eta\":3}"))
        // An hour ahead: within the 4 h after the end that a dismissal date may keep an activity.
        let dismissal = Int(Date().timeIntervalSince1970) + 3_600
        let ended = try sandbox.cli(
            "notify", "--json",
            Self.message(
                "end", timestamp: Self.t0 + 9, content: #"{"eta":0}"#, aps: #""dismissal-date":\#(dismissal)"#))
        #expect(Self.json(ended.stdout).flatMap { $0["activity"] as? [String: Any] }?["outcome"] as? String == "ended")
        let end = try #require(try Self.activities(sandbox).first)
        #expect(end["state"] as? String == "ended")
        #expect(end["timestamp"] as? Int == Self.t0 + 9)
        #expect(end["dismissAt"] as? String == Self.iso(dismissal))
        #expect(end["alert"] is NSNull, "an end without an alert shows none")

        // The text forms, and status counting it.
        let text = try sandbox.cli("activity", "list")
        #expect(text.stdout == "order-42 ended DeliveryAttributes {\"eta\":0} dismiss-at=\(Self.iso(dismissal))\n")
        #expect(try sandbox.cli("status").stdout.contains("activities:   1 (1 ended)"))
        let status = try #require(Self.json(try sandbox.cli("status", "--json").stdout))
        #expect((status["activities"] as? [String: Any])?["count"] as? Int == 1)
        #expect(daemon.log.contains("Live activity order-42 ended (end, timestamp \(Self.t0 + 9), from socket)"))

        // An unknown id: exit 1 with a message.
        let unknown = try sandbox.cli("activity", "show", "order-7")
        #expect(unknown.status == 1)
        #expect(unknown.stderr == "Error: no activity 'order-7'\n")
        daemon.stop()
    }

    @Test func oldUpdatesAreIgnoredAndBadOnesRefusedChangingNothing() throws {
        let sandbox = try Sandbox()
        let daemon = try sandbox.startServing()
        let early = try sandbox.cli("notify", Self.message("update", timestamp: Self.t0))
        #expect(early.status == 1)
        #expect(early.stderr == "Error: refused: no activity order-42: an update needs a start first\n")
        #expect(try Self.activities(sandbox).isEmpty)

        // Pushes arrive out of order over MQTT reconnects: an older one must not win.
        #expect(try sandbox.cli("notify", Self.message("start", timestamp: Self.t0 + 10)).status == 0)
        let old = try sandbox.cli("notify", "--json", Self.message("update", timestamp: Self.t0 + 5))
        #expect(old.status == 0)
        let result = try #require(Self.json(old.stdout)?["activity"] as? [String: Any])
        #expect(result["outcome"] as? String == "ignored")
        #expect(
            result["reason"] as? String
                == "update for order-42: timestamp \(Self.t0 + 5) is not newer than the last applied \(Self.t0 + 10)")

        // 4,097 bytes of content state: refused with the field named, nothing changed, the stale
        // ping beside it not applied either (the sender hears the error and can send again).
        let big = #"{"text":"\#(String(repeating: "x", count: 4_086))"}"#
        let oversize = try sandbox.cli(
            "notify",
            Self.message("update", timestamp: Self.t0 + 20, content: big, data: #"{"CONFIG_STATE":"STALE"}"#))
        #expect(oversize.status == 1)
        #expect(
            oversize.stderr
                == "Error: bad message: message.apns.payload.aps.content-state: 4097 bytes, at most 4096\n")
        let after = try #require(try Self.activities(sandbox).first)
        #expect(after["timestamp"] as? Int == Self.t0 + 10)
        #expect((after["contentState"] as? [String: Any])?["eta"] as? Int == 10)
        #expect(try sandbox.cli("status").stdout.contains("stale:        no"))

        // A valid activity beside CONFIG_STATE does both.
        let both = try sandbox.cli(
            "notify", "--json",
            Self.message("update", timestamp: Self.t0 + 30, data: #"{"CONFIG_STATE":"STALE"}"#))
        let answer = try #require(Self.json(both.stdout))
        #expect(answer["stale"] as? Bool == true)
        #expect((answer["activity"] as? [String: Any])?["outcome"] as? String == "updated")
        daemon.stop()
    }

    @Test func aRestartKeepsTheActivitiesAndKillNineLosesNoAcknowledgedUpdate() throws {
        let sandbox = try Sandbox()
        var daemon = try sandbox.startServing()
        let socket = try SocketClient(path: sandbox.socketPath)
        func send(_ message: String) -> [String: Any]? { socket.request(#"{"op":"message","message":\#(message)}"#) }
        #expect(send(Self.message("start", timestamp: Self.t0, content: #"{"n":0}"#))?["ok"] as? Bool == true)
        // Kill -9 after an acknowledged update chosen at random, with the next one on its way.
        // The kill lands at a different point of the sequence on each run; whichever it is, every
        // acknowledged update must be there, and the one in flight either whole or not at all.
        let killAfter = Int.random(in: 5...45)
        for n in 1...killAfter {
            let answer = send(Self.message("update", timestamp: Self.t0 + n, content: #"{"n":\#(n)}"#))
            #expect((answer?["activity"] as? [String: Any])?["outcome"] as? String == "updated", "\(n)")
        }
        socket.write(
            #"{"op":"message","message":\#(Self.message("update", timestamp: Self.t0 + killAfter + 1, content: #"{"n":\#(killAfter + 1)}"#))}"#
                + "\n")
        daemon.killHard()
        let survived = try #require(try Self.activities(sandbox).first)
        let n = try #require((survived["contentState"] as? [String: Any])?["n"] as? Int)
        #expect(n == killAfter || n == killAfter + 1, "acknowledged \(killAfter), found \(n)")
        #expect(survived["timestamp"] as? Int == Self.t0 + n, "the row is whole: content and timestamp together")

        // The rest of the 50 updates after the restart (the activity's timestamp picks up where the
        // database says it is, so none of them is ignored as old); then a clean restart keeps the end.
        daemon = try sandbox.startDaemon()
        for next in (n + 1)...50 {
            let result = try sandbox.cli(
                "notify", Self.message("update", timestamp: Self.t0 + next, content: #"{"n":\#(next)}"#))
            #expect(result.status == 0, "\(result.stderr)")
        }
        #expect(daemon.stop() == 0)
        daemon = try sandbox.startDaemon()
        let last = try #require(try Self.activities(sandbox).first)
        #expect((last["contentState"] as? [String: Any])?["n"] as? Int == 50)
        #expect(last["timestamp"] as? Int == Self.t0 + 50)
        daemon.stop()
    }

    @Test func overMQTTOnTheDeviceTopic() throws {
        let (sandbox, server, broker) = try MQTTTests().setUp()
        try server.serve(Sandbox.document(version: 1), etag: "\"v1\"")
        let daemon = try sandbox.startDaemon()
        #expect(eventually { daemon.log.contains("MQTT connected") }, "\(daemon.log)")
        let deviceId = try #require(Self.json(try sandbox.cli("status", "--json").stdout)?["deviceId"] as? String)
        try broker.publish(Self.message("start", timestamp: Self.t0), topic: "PUSH_RC/\(deviceId)")
        try broker.publish(Self.message("update", timestamp: Self.t0 + 1, content: #"{"eta":1}"#), topic: "PUSH_RC")
        #expect(
            try eventually {
                (try Self.activities(sandbox).first?["contentState"] as? [String: Any])?["eta"] as? Int == 1
            }, "\(daemon.log)")
        #expect(
            daemon.log.contains(
                "Live activity order-42 started (start, timestamp \(Self.t0), from mqtt PUSH_RC/\(deviceId))"))
        // A refused message over MQTT is logged, and the channel goes on. The two messages above went
        // to two topics: the device's own and the fleet's.
        try broker.publish(Self.message("update", id: "nobody", timestamp: Self.t0), topic: "PUSH_RC")
        #expect(eventually { daemon.log.contains("Refusing the update for activity nobody from mqtt PUSH_RC") })
        daemon.stop()
    }

    /// The issue's path end to end: `rcadmin activity start/update/end --mqtt --device` through a
    /// real mosquitto to a running agent, and `rcagent activity watch --json` printing each step.
    @Test func rcadminActivityThroughMosquittoReachesTheWatch() throws {
        let sandbox = try Sandbox()
        let broker = try MosquittoBroker(in: sandbox)
        try sandbox.writeConfig(extra: "[Push]\nMQTT=mqtt://127.0.0.1:\(broker.port)\nJitter=0\n")
        let daemon = try sandbox.startServing()
        defer { daemon.stop() }
        #expect(eventually { daemon.log.contains("MQTT connected") }, "\(daemon.log)")
        let deviceId = try #require(Self.json(try sandbox.cli("status", "--json").stdout)?["deviceId"] as? String)
        let output = sandbox.root.appendingPathComponent("watch.out").path
        let watch = try Subprocess(
            "/bin/sh",
            [
                "-c", "exec \"$0\" activity watch --json --config \"$1\" > \"$2\"", Binaries.url("rcagent").path,
                sandbox.configPath, output,
            ])
        defer { kill(watch.pid, SIGKILL) }
        func lines() -> [[String: Any]] {
            ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").split(separator: "\n")
                .compactMap { Self.json(String($0)) }.filter { $0["id"] as? String == "queue-7" }
        }
        func send(_ event: String, _ timestamp: Int, _ extra: [String]) throws {
            let sent = try sandbox.run(
                "rcadmin",
                [
                    "activity", event, "--live-activity-token", "queue-7", "--timestamp", String(timestamp), "--mqtt",
                    "mqtt://127.0.0.1:\(broker.port)", "--device", deviceId,
                ] + extra)
            #expect(sent.status == 0, "\(sent.stderr)")
        }
        // The start is sent again, newer each time, until the watch (subscribing meanwhile) shows it.
        var timestamp = Self.t0
        let start = ["--attributes-type", "QueueAttributes", "--attributes", #"{"counter":"3"}"#]
        #expect(
            try eventually {
                timestamp += 1
                try send("start", timestamp, start + ["--content-state", #"{"now":41}"#])
                return !lines().isEmpty
            }, "\(daemon.log)")
        try send(
            "update", timestamp + 1, ["--content-state", #"{"now":42}"#, "--alert-title", "Next", "--alert-body", "42"])
        try send("end", timestamp + 2, ["--content-state", #"{"now":43}"#])
        #expect(eventually { lines().last?["event"] as? String == "activity-ended" }, "\(lines())\n\(daemon.log)")
        let steps = lines().drop {
            $0["event"] as? String != "activity-updated" || ($0["contentState"] as? [String: Int])?["now"] != 42
        }
        #expect(steps.map { $0["event"] as? String } == ["activity-updated", "activity-ended"], "\(lines())")
        #expect((steps.first?["alert"] as? [String: String]) == ["title": "Next", "body": "42"], "\(lines())")
        #expect((steps.last?["contentState"] as? [String: Int])?["now"] == 43)
        #expect(steps.last?["state"] as? String == "ended")
    }

    @Test func watchJSONPrintsEachStepAndAHookGetsTheActivity() throws {
        let sandbox = try Sandbox()
        let hooks = sandbox.root.appendingPathComponent("hooks")
        try FileManager.default.createDirectory(at: hooks, withIntermediateDirectories: true)
        try sandbox.writeConfig(extra: "[Agent]\nHooksDirectory=\(hooks.path)\n")
        let record = sandbox.root.appendingPathComponent("record").path
        let hook = hooks.appendingPathComponent("50-record").path
        try "#!/bin/sh\nprintf '%s|%s|%s\\n' \"$RCAGENT_EVENT\" \"$RCAGENT_ACTIVITY_ID\" \"$(cat)\" >> \(record)\n"
            .write(toFile: hook, atomically: true, encoding: .utf8)
        chmod(hook, 0o755)
        let daemon = try sandbox.startServing()

        let output = sandbox.root.appendingPathComponent("watch.out").path
        let textOutput = sandbox.root.appendingPathComponent("watch.txt").path
        func follow(_ arguments: String, into file: String) throws -> Subprocess {
            try Subprocess(
                "/bin/sh",
                [
                    "-c", "exec \"$0\" \(arguments) --config \"$1\" > \"$2\"", Binaries.url("rcagent").path,
                    sandbox.configPath, file,
                ])
        }
        let watch = try follow("activity watch --json", into: output)
        // The text form of the general `watch`, which shows activity events as their own lines.
        let textWatch = try follow("watch", into: textOutput)
        func lines() -> [[String: Any]] {
            ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").split(separator: "\n")
                .compactMap { Self.json(String($0)) }
        }
        func textLines() -> [String] {
            ((try? String(contentsOfFile: textOutput, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }
        // Synchronize on the watchers: a probe activity is updated until its line shows up in both.
        var probe = 0
        #expect(try sandbox.cli("notify", Self.message("start", id: "probe", timestamp: Self.t0)).status == 0)
        #expect(
            try eventually {
                probe += 1
                _ = try sandbox.cli("notify", Self.message("update", id: "probe", timestamp: Self.t0 + probe))
                return lines().contains { $0["id"] as? String == "probe" }
                    && textLines().contains { $0.contains(" activity-updated probe ") }
            }, "\(daemon.log)")

        let steps = [
            Self.message("start", timestamp: Self.t0, aps: #""alert":{"title":"Order 42","body":"Ready soon"}"#),
            Self.message("update", timestamp: Self.t0 + 1, content: #"{"eta":1}"#),
            Self.message("end", timestamp: Self.t0 + 2, content: #"{"eta":0}"#, aps: #""dismissal-date":1"#),
        ]
        for step in steps { #expect(try sandbox.cli("notify", step).status == 0) }
        let expected = ["activity-started", "activity-updated", "activity-removed"]
        #expect(
            eventually { lines().filter { ($0["id"] as? String) == "order-42" }.count == 3 },
            "\(lines())\n\(daemon.log)")
        let order = lines().filter { ($0["id"] as? String) == "order-42" }
        #expect(order.map { $0["event"] as? String ?? "" } == expected)
        #expect((order[1]["contentState"] as? [String: Any])?["eta"] as? Int == 1)
        #expect(order[2]["reason"] as? String == "dismissal-date passed")
        #expect(lines().allSatisfy { ($0["event"] as? String)?.hasPrefix("activity-") == true }, "activity events only")
        // A dismissal in the past removed it at once.
        #expect(try Self.activities(sandbox).map { $0["id"] as? String } == ["probe"])

        // The hook heard the start with the activity and its alert on stdin.
        #expect(
            eventually {
                ((try? String(contentsOfFile: record, encoding: .utf8)) ?? "").contains("activity-started|order-42|")
            }, "\(daemon.log)")
        let started = try #require(
            ((try? String(contentsOfFile: record, encoding: .utf8)) ?? "").split(separator: "\n")
                .first { $0.hasPrefix("activity-started|order-42|") })
        let stdin = try #require(Self.json(String(started.split(separator: "|", maxSplits: 2)[2])))
        #expect(stdin["event"] as? String == "activity-started")
        #expect(stdin["id"] as? String == "order-42")
        let activity = try #require(stdin["activity"] as? [String: Any])
        #expect((activity["alert"] as? [String: Any])?["body"] as? String == "Ready soon")
        #expect(
            eventually { textLines().contains { $0.hasSuffix(" activity-removed order-42 (dismissal-date passed)") } },
            "\(textLines())")
        let updatedLine = textLines().first { $0.contains(" activity-updated order-42 ") }
        #expect(updatedLine?.hasSuffix(#" activity-updated order-42 active DeliveryAttributes {"eta":1}"#) == true)
        for follower in [watch, textWatch] {
            kill(follower.pid, SIGTERM)
            _ = follower.finish()
        }
        daemon.stop()
    }

    @Test func anEndedActivityIsRemovedAtItsDismissalDate() throws {
        let sandbox = try Sandbox()
        let daemon = try sandbox.startServing()
        let watcher = try SocketClient(path: sandbox.socketPath)
        #expect(watcher.watch())
        #expect(try sandbox.cli("notify", Self.message("start", timestamp: Self.t0)).status == 0)
        // Two seconds ahead: the removal comes from the daemon's own deadline, not from any request.
        let dismissal = Int(Date().timeIntervalSince1970) + 2
        #expect(
            try sandbox.cli(
                "notify", Self.message("end", timestamp: Self.t0 + 1, aps: #""dismissal-date":\#(dismissal)"#)
            ).status == 0)
        #expect(try Self.activities(sandbox).first?["state"] as? String == "ended")
        let removed = watcher.event(timeout: 15) { $0["event"] as? String == "activity-removed" }
        #expect(removed?["reason"] as? String == "dismissed", "\(daemon.log)")
        #expect(try Self.activities(sandbox).isEmpty)
        #expect(Int(Date().timeIntervalSince1970) >= dismissal, "not before its date")
        #expect(daemon.log.contains("Live activity order-42 removed (its dismissal date came)"))
        daemon.stop()
    }

    /// Hostile messages kept by the broker (retained) come again at every connect: each is refused
    /// or ignored with a log line, and the daemon keeps running through restarts. An id with shell,
    /// path and quote characters is applied as it is and logged as one line.
    @Test func retainedHostileMessagesNeverStopTheDaemon() throws {
        let (sandbox, server, broker) = try MQTTTests().setUp()
        try server.serve(Sandbox.document(version: 1), etag: "\"v1\"")
        // The device's id first: one retained message per topic, the fleet's and the device's own.
        var daemon = try sandbox.startDaemon()
        let deviceId = try #require(Self.json(try sandbox.cli("status", "--json").stdout)?["deviceId"] as? String)
        #expect(daemon.stop() == 0)
        let deep = String(repeating: #"{"a":"#, count: 120) + "1" + String(repeating: "}", count: 120)
        let hostileId = #"$(touch${IFS}pwned);`id`*/../..'"<x>"#
        let idJSON = #"$(touch${IFS}pwned);`id`*/../..'\"<x>"#
        try broker.publish(Self.message("start", timestamp: Self.t0, content: deep), topic: "PUSH_RC", retain: true)
        try broker.publish(
            Self.message("start", id: idJSON, timestamp: Self.t0, content: #"{"eta":"\u2028\u001b[31m"}"#),
            topic: "PUSH_RC/\(deviceId)", retain: true)
        for round in 1...2 {
            daemon = try sandbox.startDaemon()
            #expect(
                eventually {
                    daemon.log.contains("Ignoring an MQTT message on PUSH_RC: ")
                        && daemon.log.contains(
                            round == 1 ? "started (start, timestamp" : "Ignoring the start for activity")
                }, "\(round): \(daemon.log)")
            #expect(try sandbox.cli("status").status == 0)
            let activities = try Self.activities(sandbox)
            #expect(activities.map { $0["id"] as? String } == [hostileId], "\(round)")
            // Every log line is one line: the escape and the line separator in the content never reach it.
            #expect(!daemon.log.contains("\u{1b}") && !daemon.log.contains("\u{2028}"))
            #expect(daemon.stop() == 0, "\(round): \(daemon.log)")
        }
        #expect(!FileManager.default.fileExists(atPath: sandbox.root.appendingPathComponent("pwned").path))
    }
}
