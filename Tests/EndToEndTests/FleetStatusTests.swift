import Foundation
import Glibc
import RCCore
import TestSupport
import Testing

/// `rcadmin fleet status` against a real mosquitto holding retained reports, published with
/// mosquitto_pub exactly as agents publish them (RCCore's DeviceReport JSON, QoS 1, retained, on
/// `rcagent/status/<deviceId>`). Everything is checked from the outside: exit codes, stdout,
/// stderr, and the `--watch` lines as the built binary writes them.
@Suite struct FleetStatusTests {
    static let t0 = Timestamp(iso8601: "2026-11-30T12:00:00Z")!

    /// A healthy device's report on `version`; `change` makes it otherwise.
    static func report(
        _ id: String, _ version: String?, _ change: (inout DeviceReport) -> Void = { _ in }
    ) -> DeviceReport { .sample(id, version, at: t0, change) }

    /// A sandbox and a broker; the reports go to `rcagent/status` unless a test says otherwise.
    final class Fleet {
        let sandbox: Sandbox
        let broker: Mosquitto

        init(brokerSettings: String = "") throws {
            sandbox = try Sandbox()
            broker = try Mosquitto(in: sandbox.root.appendingPathComponent("broker"), settings: brokerSettings)
        }

        var url: String { "mqtt://127.0.0.1:\(broker.port)" }

        /// Publishes `report` retained on its device's topic, as the agent does.
        func publish(_ report: DeviceReport, topic: String = "rcagent/status") throws {
            try broker.publish(report.json.compactText, topic: topic + "/" + report.deviceId, retain: true)
        }

        /// Publishes any payload retained on `topic` (an empty one clears what the broker keeps).
        func publish(raw payload: String, topic: String) throws {
            try broker.publish(payload, topic: topic, retain: true)
        }

        func status(_ arguments: [String]) throws -> ProcessResult {
            try sandbox.run("rcadmin", ["fleet", "status", "--mqtt", url] + arguments)
        }

        func watch(_ arguments: [String]) throws -> Watch {
            try Watch(sandbox, ["fleet", "status", "--mqtt", url, "--watch"] + arguments)
        }
    }

    /// A running `rcadmin fleet status --watch`: its stdout goes to a file the test reads as it
    /// grows (a pipe would only be read at the end), stderr to another.
    final class Watch {
        let process: Subprocess
        let output: String
        let errors: String
        private var result: ProcessResult?

        /// `executable`: another program than rcadmin, followed the same way.
        init(_ sandbox: Sandbox, _ arguments: [String], executable: String? = nil) throws {
            output = sandbox.root.appendingPathComponent("watch-\(UUID().uuidString.prefix(6)).out").path
            errors = output + ".err"
            process = try Subprocess(
                "/bin/sh",
                ["-c", #"exec "$0" "$@" > "$OUT" 2> "$ERR""#, executable ?? Binaries.url("rcadmin").path] + arguments,
                environment: ["OUT": output, "ERR": errors, "PATH": "/usr/bin:/bin"])
        }

        var lines: [String] {
            ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }

        var stderr: String { (try? String(contentsOfFile: errors, encoding: .utf8)) ?? "" }

        /// Sends `signal` and waits for the exit.
        func stop(_ signal: Int32 = SIGINT) -> ProcessResult {
            kill(process.pid, signal)
            return finish()
        }

        /// Waits for the process to end by itself (bounded: a failure, not a wait).
        func finish(bound: Duration = .seconds(120)) -> ProcessResult {
            if let result { return result }
            let finished = process.finish(bound: bound)
            result = finished
            return finished
        }

        deinit {
            if result == nil {
                kill(process.pid, SIGKILL)
                _ = process.finish()
            }
        }
    }

    /// Nine devices: 43 is the newest version; each kind of trouble once.
    static let mixedFleet: [DeviceReport] = [
        report("k01", "43"), report("k02", "43"), report("k03", "43"),
        report("k04", "43") { $0.stale = .init(set: true, since: t0) },
        // The last will: the same report with online false.
        report("k05", "42") { $0.online = false },
        report("k06", "42") { $0.lastFetch = .init(status: "failure", at: t0, error: "HTTP 503 from the server") },
        report("k07", "41") { $0.update = .required },
        report("k08", nil) { $0.update = .recommended },
        report("k09", "43") { $0.update = .unknown },
    ]

    static func publishMixedFleet(_ fleet: Fleet) throws {
        for report in mixedFleet { try fleet.publish(report) }
        // A report cleared since (an empty retained message) is no device.
        try fleet.publish(report("k10", "40"))
        try fleet.publish(raw: "", topic: "rcagent/status/k10")
    }

    @Test func summarizesAMixedFleet() throws {
        let fleet = try Fleet()
        try Self.publishMixedFleet(fleet)
        let result = try fleet.status([])
        #expect(result.status == 0, "\(result.stderr)")
        let expectedHead = """
            Devices: 9 (online 8, offline 1)
            Template versions (newest first):
              v43   5  55%
              v42   2  22%
              v41   1  11%
              none  1  11%
            Newest version: v43, on 5 (55%)
            Stale: 1
            Failing fetches: 1
            Updates pending: 1 required, 1 recommended
            Update state unknown: 1
            Lagging behind v43: 4
            Activation deferred: 0
            Rolled back: 0

            """
        #expect(result.stdout.hasPrefix(expectedHead), "\(result.stdout)")
        for list in [
            "Offline (1):\n  k05\n", "Stale (1):\n  k04\n",
            "Failing fetches (1):\n  k06: failure: HTTP 503 from the server\n",
            "Required update pending (1):\n  k07\n", "Recommended update pending (1):\n  k08\n",
            "Update state unknown (1):\n  k09\n",
            "Lagging behind v43 (4):\n  k05: v42\n  k06: v42\n  k07: v41\n  k08: none\n",
        ] {
            #expect(result.stdout.contains("\n" + list), "\(list)\n---\n\(result.stdout)")
        }
        #expect(!result.stdout.contains("k10") && !result.stdout.contains("v40"), "the cleared report")
    }

    @Test func listsAreCappedUnlessAsked() throws {
        let fleet = try Fleet()
        try fleet.publish(Self.report("new", "8"))
        for n in 1...5 { try fleet.publish(Self.report("old-\(n)", "7")) }
        let capped = try fleet.status(["--limit", "2"])
        #expect(capped.status == 0, "\(capped.stderr)")
        #expect(
            capped.stdout.contains("\nLagging behind v8 (5):\n  old-1: v7\n  old-2: v7\n  ... and 3 more\n"),
            "\(capped.stdout)")
        let all = try fleet.status(["--all"])
        #expect(all.stdout.contains("  old-5: v7\n") && !all.stdout.contains("more"), "\(all.stdout)")
        let clash = try fleet.status(["--all", "--limit", "3"])
        #expect(clash.status == 64 && clash.stderr.contains("--all and --limit N exclude each other"))
    }

    @Test func jsonHasTheCountsFullListsAndTheReports() throws {
        let fleet = try Fleet()
        try Self.publishMixedFleet(fleet)
        let result = try fleet.status(["--json", "--limit", "1"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasSuffix("}\n") && result.stdout.split(separator: "\n").count == 1, "one document")
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout)")
        #expect(document["topic"] as? String == "rcagent/status" && document["complete"] as? Bool == true)
        #expect(document["newestVersion"] as? String == "43")
        let counts = try #require(document["counts"] as? [String: Int])
        #expect(
            counts == [
                "devices": 9, "online": 8, "offline": 1, "onNewest": 5, "stale": 1, "failing": 1, "requiredUpdate": 1,
                "recommendedUpdate": 1, "updateUnknown": 1, "lagging": 4, "unreadable": 0, "deferred": 0,
                "rolledBack": 0,
            ])
        let versions = try #require(document["versions"] as? [[String: Any]])
        #expect(versions.map { $0["version"] as? String } == ["43", "42", "41", nil])
        #expect(versions.map { $0["devices"] as? Int } == [5, 2, 1, 1])
        let lists = try #require(document["lists"] as? [String: [String]])
        #expect(lists["lagging"] == ["k05", "k06", "k07", "k08"], "full lists: --limit is for the text")
        #expect(lists["offline"] == ["k05"] && lists["stale"] == ["k04"] && lists["failing"] == ["k06"])
        #expect(lists["requiredUpdate"] == ["k07"] && lists["recommendedUpdate"] == ["k08"])
        #expect(lists["updateUnknown"] == ["k09"])
        let devices = try #require(document["devices"] as? [[String: Any]])
        #expect(devices.map { $0["deviceId"] as? String } == Self.mixedFleet.map(\.deviceId))
        // Each report as the agent wrote it.
        let k06 = try JSONSerialization.data(withJSONObject: devices[5])
        #expect(try DeviceReport(parsing: Array(k06)) == Self.mixedFleet[5])
        #expect((document["unreadable"] as? [Any])?.isEmpty == true)
    }

    @Test func hostileReportsAreListedAsUnreadableAndEscaped() throws {
        let fleet = try Fleet()
        try fleet.publish(Self.report("good", "43"))
        try fleet.publish(raw: "{not json", topic: "rcagent/status/bad-json")
        try fleet.publish(raw: #"{"deviceId":"wrong-types","online":"yes"}"#, topic: "rcagent/status/wrong-types")
        let padding = String(repeating: "x", count: 17 << 10)
        try fleet.publish(raw: #"{"deviceId":"huge","online":true,"pad":"\#(padding)"}"#, topic: "rcagent/status/huge")
        try fleet.publish(raw: Self.report("good", "1").json.compactText, topic: "rcagent/status/impostor")
        try fleet.publish(Self.report("level", "43"), topic: "rcagent/status/extra")
        try fleet.publish(
            raw: #"{"deviceId":"escape-reason","online":true,"app":{"update":"\u001b]0;pwned\u0007"}}"#,
            topic: "rcagent/status/escape-reason")
        // Readable reports carrying terminal controls: a version, a fetch error, a device id.
        try fleet.publish(Self.report("escape-version", "\u{1b}[2J\u{1b}[31m44"))
        try fleet.publish(
            Self.report("escape-error", "43") {
                $0.lastFetch = .init(status: "failure", at: Self.t0, error: "\u{1b}[31mred\u{1b}[0m\nsecond line")
            })
        try fleet.publish(Self.report("\u{202e}evil", "43") { $0.stale = .init(set: true, since: Self.t0) })

        let result = try fleet.status(["--all"])
        #expect(result.status == 0, "\(result.stderr)")
        let text = result.stdout
        let controls: Set<Unicode.Scalar> = ["\u{1b}", "\u{7}", "\u{202e}"]
        #expect(!text.unicodeScalars.contains { controls.contains($0) }, "\(text.debugDescription)")
        #expect(text.hasPrefix("Devices: 4 (online 4, offline 0)\n"), "\(text)")
        #expect(text.contains("Unreadable reports: 6\n"), "\(text)")
        for (topic, reason) in [
            ("bad-json", "invalid JSON"), ("wrong-types", "online is string, not true or false"),
            ("huge", "over the 16384-byte limit"),
            ("impostor", #"the report's deviceId "good" is not the topic's last level"#),
            ("extra/level", "the topic has more than one level after the report topic"),
            ("escape-reason", #"app.update is "\x1b]0;pwned\x07""#),
        ] {
            #expect(text.contains("\n  rcagent/status/\(topic): "), "\(topic)\n\(text)")
            #expect(text.contains(reason), "\(reason)\n\(text)")
        }
        #expect(text.contains(#"  v\x1b[2J\x1b[31m44  1"#), "\(text)")
        #expect(text.contains(#"  escape-error: failure: \x1b[31mred\x1b[0m\nsecond line"#), "\(text)")
        #expect(text.contains("\nStale (1):\n" + #"  \u{202e}evil"# + "\n"), "\(text)")

        // JSON keeps the texts whole, escaped as JSON, with nothing a terminal would act on either.
        let json = try fleet.status(["--json"])
        #expect(json.status == 0 && !json.stdout.unicodeScalars.contains { controls.contains($0) })
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json.stdout)")
        let unreadable = try #require(document["unreadable"] as? [[String: String]])
        #expect(unreadable.count == 6)
        let versions = (document["versions"] as? [[String: Any]])?.compactMap { $0["version"] as? String }
        #expect(versions?.contains("\u{1b}[2J\u{1b}[31m44") == true, "\(versions ?? [])")
    }

    @Test func noReportsSaysSo() throws {
        let fleet = try Fleet()
        let result = try fleet.status(["--topic", "nobody/here"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasPrefix("No device reports on nobody/here/+"), "\(result.stdout)")
        let json = try fleet.status(["--topic", "nobody/here", "--json"])
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json.stdout)")
        #expect((document["counts"] as? [String: Int])?["devices"] == 0 && document["newestVersion"] is NSNull)
    }

    @Test func aBrokerThatIsDownIsAClearError() throws {
        let sandbox = try Sandbox()
        let port = try Mosquitto.freePort()
        let result = try sandbox.run("rcadmin", ["fleet", "status", "--mqtt", "mqtt://127.0.0.1:\(port)"])
        #expect(result.status == 1)
        #expect(
            result.stderr == "Error: cannot reach the MQTT broker at 127.0.0.1:\(port): Connection refused\n",
            "\(result.stderr)")
        #expect(result.stdout.isEmpty)
        let watch = try sandbox.run("rcadmin", ["fleet", "status", "--watch", "--mqtt", "mqtt://127.0.0.1:\(port)"])
        #expect(watch.status == 1 && watch.stderr.contains("cannot reach the MQTT broker"), "\(watch.stderr)")
        let bad = try sandbox.run("rcadmin", ["fleet", "status", "--mqtt", "http://127.0.0.1"])
        #expect(bad.status == 64 && bad.stderr.contains("--mqtt must be an mqtt:// or mqtts:// URL"))
        let wildcard = try sandbox.run("rcadmin", ["fleet", "status", "--topic", "a/#"])
        #expect(wildcard.status == 64, "\(wildcard.stderr)")
    }

    /// An ACL that lets devices write only their own topic (what a fleet should have) also refuses
    /// the command's marker: the quiet period ends the retained set instead.
    @Test func withoutTheMarkerTheQuietPeriodEndsTheRetainedSet() throws {
        let sandbox = try Sandbox()
        let acl = sandbox.root.appendingPathComponent("acl").path
        try sandbox.write("topic read rcagent/status/#\npattern write rcagent/status/%c\n", to: acl)
        let broker = try Mosquitto(in: sandbox.root.appendingPathComponent("broker"), settings: "acl_file \(acl)\n")
        for (id, version) in [("k01", "5"), ("k02", "6")] {
            let payload = Self.report(id, version).json.compactText
            let published = try runProcess(
                "/usr/bin/mosquitto_pub",
                ["-p", String(broker.port), "-i", id, "-q", "1", "-r", "-t", "rcagent/status/\(id)", "-m", payload])
            #expect(published.status == 0, "\(published.stderr)")
        }
        // Another device's topic is refused by the broker: it never becomes a report.
        _ = try runProcess(
            "/usr/bin/mosquitto_pub",
            ["-p", String(broker.port), "-i", "k03", "-q", "1", "-r", "-t", "rcagent/status/k01", "-m", "{}"])
        let started = ContinuousClock.now
        let result = try sandbox.run("rcadmin", ["fleet", "status", "--mqtt", "mqtt://127.0.0.1:\(broker.port)"])
        let elapsed = ContinuousClock.now - started
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasPrefix("Devices: 2 (online 2, offline 0)\n"), "\(result.stdout)")
        #expect(result.stdout.contains("Lagging behind v6: 1\n"), "\(result.stdout)")
        // The 2 s quiet period, not the marker, ended it: the ACL did refuse the marker.
        #expect(elapsed >= .milliseconds(1_900), "\(elapsed)")
    }

    // MARK: - Real agents

    /// Two real rcagentd reporting to one broker, each fetching from its own config server: the
    /// watch follows one of them to a new template, then the other's last will; the summary then
    /// lists the one left behind.
    @Test func followsRealAgentsThroughARolloutAndAKill() throws {
        let first = try Sandbox()
        let second = try Sandbox()
        let broker = try Mosquitto(in: first)
        var servers: [ConfigServer] = []
        var daemons: [DaemonProcess] = []
        var ids: [String] = []
        for sandbox in [first, second] {
            let server = try ConfigServer(in: sandbox)
            servers.append(server)
            try ReportTests().configure(sandbox, server, push: "mqtt://127.0.0.1:\(broker.port)")
            try server.serve(Sandbox.document(version: 1), etag: "\"v1\"")
            daemons.append(try sandbox.startDaemon())
            ids.append(try FirebaseSourceTests().deviceId(sandbox))
        }
        defer {
            daemons.forEach { $0.killHard() }
            withExtendedLifetime(servers) {}
        }
        let watch = try Watch(first, ["fleet", "status", "--mqtt", "mqtt://127.0.0.1:\(broker.port)", "--watch"])
        #expect(
            eventually(60) { watch.lines.contains { $0.contains(" devices 2 online 2 · v1 2 (100%) · ") } },
            "\(watch.lines)\n\(watch.stderr)\n\(daemons.map(\.log))")
        // The ping: the first agent's server has version 2 now, the second's still 1. Both agents
        // have reported version 1, so their start-up fetches are over.
        try servers[0].serve(Sandbox.document(version: 2), etag: "\"v2\"")
        try broker.publish(MQTTTests.ping)
        #expect(
            eventually(60) { watch.lines.contains { $0.contains(" devices 2 online 2 · v2 1 (50%) · ") } },
            "\(watch.lines)\n\(daemons.map(\.log))")
        // kill -9: the broker publishes the second agent's last will.
        daemons[1].killHard()
        #expect(
            eventually(60) { watch.lines.last?.hasSuffix(" · offline 1") == true }, "\(watch.lines)\n\(watch.stderr)")
        #expect(watch.stop().status == 0, "\(watch.stderr)")

        let result = try first.run("rcadmin", ["fleet", "status", "--mqtt", "mqtt://127.0.0.1:\(broker.port)"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasPrefix("Devices: 2 (online 1, offline 1)\n"), "\(result.stdout)")
        #expect(result.stdout.contains("\nOffline (1):\n  \(ids[1])\n"), "\(result.stdout)")
        // The will is the report as of the agent's connect: v1, or none if it connected before
        // its first activation.
        #expect(result.stdout.contains("\nLagging behind v2 (1):\n  \(ids[1]): "), "\(result.stdout)")
    }

    // MARK: - Large retained sets

    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures")

    /// Publishes `count` reports on `version` retained, at once (Tests/Fixtures/retained_reports.py).
    static func publishReports(_ broker: Mosquitto, count: Int, version: String) throws {
        let published = try runProcess(
            "/usr/bin/python3",
            [fixtures.appendingPathComponent("retained_reports.py").path, String(broker.port), String(count), version])
        #expect(published.status == 0, "\(published.stderr)")
    }

    /// mosquitto sends a QoS 1 subscription's retained messages through a queue of at most
    /// 20 in flight plus `max_queued_messages` (1000) and drops the rest: the command subscribes
    /// at QoS 0, which a broker with default settings delivers a few thousand reports whole.
    @Test func aFleetOverMosquittosQueueLimitIsReadWhole() throws {
        let fleet = try Fleet()
        try Self.publishReports(fleet.broker, count: 3_000, version: "43")
        let result = try fleet.status(["--json", "--timeout", "60s"])
        #expect(result.status == 0, "\(result.stderr)")
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stderr)")
        #expect((document["counts"] as? [String: Int])?["devices"] == 3_000)
    }

    /// 20,000 reports on a broker without the queue limit: every one is counted. (Before the
    /// MQTT client kept its event handler in a box, each message wrapped it in more thunks, and
    /// this many overflowed the collector thread's stack.)
    @Test func twentyThousandReportsAreCounted() throws {
        let sandbox = try Sandbox()
        let broker = try Mosquitto(
            in: sandbox.root.appendingPathComponent("broker"), settings: "max_queued_messages 0\n")
        try Self.publishReports(broker, count: 20_000, version: "43")
        let result = try sandbox.run(
            "rcadmin", ["fleet", "status", "--mqtt", "mqtt://127.0.0.1:\(broker.port)", "--timeout", "120s"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasPrefix("Devices: 20000 (online 20000, offline 0)\n"), "\(result.stdout)")
    }

    // MARK: - Watch

    @Test func watchFollowsARolloutLineByLine() throws {
        let fleet = try Fleet()
        for n in 1...4 { try fleet.publish(Self.report("k\(n)", "42")) }
        let watch = try fleet.watch([])
        #expect(
            eventually(60) {
                watch.lines.contains {
                    $0.hasSuffix(" devices 4 online 4 · v42 4 (100%) · stale 0 · failing 0 · offline 0")
                }
            },
            "\(watch.lines)\n\(watch.stderr)")
        try fleet.publish(Self.report("k1", "43"))
        #expect(eventually(60) { watch.lines.contains { $0.contains(" · v43 1 (25%) · ") } }, "\(watch.lines)")
        for n in 2...4 { try fleet.publish(Self.report("k\(n)", "43")) }
        #expect(eventually(60) { watch.lines.contains { $0.contains(" · v43 4 (100%) · ") } }, "\(watch.lines)")
        // A device going offline (its last will) is a change too.
        try fleet.publish(Self.report("k4", "43") { $0.online = false })
        #expect(eventually(60) { watch.lines.last?.hasSuffix(" · offline 1") == true }, "\(watch.lines)")
        let result = watch.stop(SIGINT)
        #expect(result.status == 0, "\(watch.stderr)")
        let lines = watch.lines
        // Every line starts with the time (UTC) and differs from the one before.
        let time = /^\d\d:\d\d:\d\d devices 4 online [34] · v4[23] [1-4] \(\d+%\) · stale 0 · failing 0 · offline [01]$/
        #expect(lines.allSatisfy { $0.wholeMatch(of: time) != nil }, "\(lines)")
        #expect(zip(lines, lines.dropFirst()).allSatisfy { $0.dropFirst(9) != $1.dropFirst(9) }, "\(lines)")
        // The rollout only moves forward.
        let onNewest = lines.compactMap { line in line.firstMatch(of: #/v43 (\d) /#).map { Int($0.1) ?? -1 } }
        #expect(onNewest == onNewest.sorted() && onNewest.first == 1 && onNewest.last == 4, "\(lines)")
    }

    @Test func watchJSONWritesOneObjectPerLineAndStopsOnSIGTERM() throws {
        let fleet = try Fleet()
        try fleet.publish(Self.report("k1", "42"))
        try fleet.publish(Self.report("k2", "42"))
        let watch = try fleet.watch(["--json"])
        func objects() -> [[String: Any]] {
            watch.lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }
        #expect(eventually(60) { !objects().isEmpty }, "\(watch.lines)\n\(watch.stderr)")
        try fleet.publish(Self.report("k2", "43") { $0.stale = .init(set: true, since: Self.t0) })
        #expect(
            eventually(60) { objects().contains { $0["newestVersion"] as? String == "43" } }, "\(watch.lines)")
        let result = watch.stop(SIGTERM)
        #expect(result.status == 0, "\(watch.stderr)")
        let all = objects()
        #expect(all.count == watch.lines.count, "every line is one JSON object: \(watch.lines)")
        let first = try #require(all.first?["counts"] as? [String: Int])
        #expect(first["devices"] == 2 && first["onNewest"] == 2 && first["stale"] == 0)
        let last = try #require(all.last?["counts"] as? [String: Int])
        #expect(last["onNewest"] == 1 && last["lagging"] == 1 && last["stale"] == 1, "\(all)")
        #expect((all.last?["at"] as? String).flatMap { Timestamp(iso8601: $0) } != nil)
    }

    @Test func watchEndsWhenItsReaderIsGone() throws {
        let fleet = try Fleet()
        try fleet.publish(Self.report("k1", "42"))
        let pipeline = try runProcess(
            "/bin/sh",
            ["-c", #""$0" fleet status --mqtt "$1" --watch | head -n 1"#, Binaries.url("rcadmin").path, fleet.url])
        #expect(pipeline.status == 0, "\(pipeline.stderr)")
        #expect(pipeline.stdout.hasSuffix(" devices 1 online 1 · v42 1 (100%) · stale 0 · failing 0 · offline 0\n"))
    }

    @Test func watchEndsWithAnErrorWhenTheBrokerDoesNotComeBack() throws {
        let fleet = try Fleet()
        try fleet.publish(Self.report("k1", "42"))
        let watch = try fleet.watch(["--timeout", "2s"])
        #expect(eventually(60) { !watch.lines.isEmpty }, "\(watch.stderr)")
        fleet.broker.stop()
        let result = watch.finish()
        #expect(result.status == 1, "\(watch.stderr)")
        #expect(watch.stderr.contains("Lost the connection to the MQTT broker at 127.0.0.1:\(fleet.broker.port)"))
        #expect(
            watch.stderr.contains(
                "Error: lost the connection to the MQTT broker at 127.0.0.1:\(fleet.broker.port) ("),
            "\(watch.stderr)")
        #expect(watch.stderr.contains("and it did not come back within 2s"), "\(watch.stderr)")
    }

    @Test func watchRebuildsThePictureAfterAReconnect() throws {
        let fleet = try Fleet()
        try fleet.publish(Self.report("k1", "42"))
        try fleet.publish(Self.report("k2", "42"))
        let watch = try fleet.watch(["--timeout", "60s"])
        #expect(eventually(60) { watch.lines.contains { $0.contains(" devices 2 ") } }, "\(watch.stderr)")
        // Restarted without persistence, the broker has lost every retained report: one device
        // reports again, and the picture is rebuilt from what the broker holds now.
        fleet.broker.stop()
        try fleet.broker.start()
        #expect(eventually(60) { watch.stderr.contains("Reconnected to the MQTT broker") }, "\(watch.stderr)")
        try fleet.publish(Self.report("k2", "43"))
        #expect(
            eventually(60) { watch.lines.last?.contains(" devices 1 online 1 · v43 1 (100%) ") == true },
            "\(watch.lines)\n\(watch.stderr)")
        #expect(watch.stop().status == 0, "\(watch.stderr)")
    }
}
