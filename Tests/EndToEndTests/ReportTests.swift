import Foundation
import Glibc
import RCSystem
import TestSupport
import Testing

/// A real `mosquitto_sub` on a broker, every message it gets written to a file with its retain
/// flag: how the report tests see what an agent published (and what the broker published for it).
/// It also subscribes to a sentinel topic: once a message published there arrives, the
/// subscription is live and every retained message it was owed has arrived before it.
final class ReportSubscriber {
    struct Message {
        let retained: Bool
        let topic: String
        let payload: String
        var json: [String: Any]? { try? JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any] }
    }

    private let process = Process()
    private let path: String
    private let port: Int
    static let sentinel = "test/sentinel"

    /// `options`: more mosquitto_sub options (TLS files).
    init(_ sandbox: Sandbox, port: Int, topic: String = "rcagent/status/#", options: [String] = []) throws {
        self.port = port
        path = sandbox.root.appendingPathComponent("sub-\(UUID().uuidString.prefix(6)).txt").path
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_sub")
        process.arguments =
            [
                "-h", "127.0.0.1", "-p", String(port), "-q", "1", "-t", topic, "-t", Self.sentinel, "-F", "%r %t %p",
            ] + options
        process.standardOutput = FileHandle(forWritingAtPath: path)
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    deinit {
        // SIGKILL: a SIGTERM the test runner blocks is blocked in the child too.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Every message so far, oldest first (the sentinel's left out).
    var messages: [Message] {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n", omittingEmptySubsequences: true).compactMap { line in
            let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count >= 2, parts[1] != Self.sentinel else { return nil }
            return Message(
                retained: parts[0] == "1", topic: String(parts[1]), payload: parts.count > 2 ? String(parts[2]) : "")
        }
    }

    /// The reports (messages that parse as JSON objects) on `topic`, oldest first.
    func reports(on topic: String) -> [[String: Any]] {
        messages.filter { $0.topic == topic }.compactMap(\.json)
    }

    /// Waits until the subscription is live: publishes to the sentinel topic until it comes back.
    func waitUntilLive() throws -> Bool {
        let marker = UUID().uuidString
        let publisher = Process()
        publisher.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_pub")
        publisher.arguments = ["-h", "127.0.0.1", "-p", String(port), "-q", "1", "-t", Self.sentinel, "-m", marker]
        return try eventually {
            let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            if text.contains(marker) { return true }
            let publish = Process()
            publish.executableURL = publisher.executableURL
            publish.arguments = publisher.arguments
            try publish.run()
            publish.waitUntilExit()
            return (try? String(contentsOfFile: path, encoding: .utf8))?.contains(marker) ?? false
        }
    }
}

/// The device report (`[Report] MQTTStatusTopic=`) against a real mosquitto and the real rcagentd:
/// retained at start, republished on changes and reconnects, paced in bursts, the last will on
/// kill -9, the offline report on SIGTERM, broker failover lists, one connection per device.
@Suite struct ReportTests {
    static let ping = MQTTTests.ping

    /// A daemon fetching from a config server over HTTP, pushed and reporting over `broker`.
    /// `push`: the `[Push] MQTT=` value (default: the broker); `report`: more `[Report]` lines.
    func setUp(push: String? = nil, report: String = "") throws -> (Sandbox, ConfigServer, MosquittoBroker) {
        let sandbox = try Sandbox()
        let server = try ConfigServer(in: sandbox)
        let broker = try MosquittoBroker(in: sandbox)
        try configure(sandbox, server, push: push ?? "mqtt://127.0.0.1:\(broker.port)", report: report)
        return (sandbox, server, broker)
    }

    func configure(_ sandbox: Sandbox, _ server: ConfigServer, push: String, report: String = "") throws {
        try sandbox.writeConfig(
            extra: """
                [Source]
                Type=http
                URL=\(server.url)
                [Push]
                MQTT=\(push)
                Jitter=0
                [Report]
                MQTTStatusTopic=rcagent/status
                \(report)
                """)
    }

    /// Serves template 1, starts the daemon and waits for its report of template 1.
    func start(_ sandbox: Sandbox, _ server: ConfigServer, _ subscriber: ReportSubscriber) throws -> (
        DaemonProcess, String
    ) {
        try server.serve(Sandbox.document(version: 1), etag: "\"v1\"")
        let daemon = try sandbox.startDaemon()
        let deviceId = try FirebaseSourceTests().deviceId(sandbox)
        let topic = "rcagent/status/\(deviceId)"
        #expect(
            eventually { subscriber.reports(on: topic).last?["templateVersion"] as? String == "1" },
            "\(subscriber.messages.map(\.payload))\n\(daemon.log)")
        return (daemon, topic)
    }

    @Test func theReportIsRetainedAtStartAndFollowsTheTemplate() throws {
        let (sandbox, server, broker) = try setUp()
        let subscriber = try ReportSubscriber(sandbox, port: broker.port)
        #expect(try subscriber.waitUntilLive())
        let (daemon, topic) = try start(sandbox, server, subscriber)
        let first = try #require(subscriber.reports(on: topic).last)
        #expect(first["online"] as? Bool == true)
        #expect(first["deviceId"] as? String == String(topic.dropFirst("rcagent/status/".count)))
        #expect((first["agentVersion"] as? String)?.isEmpty == false)
        #expect((first["stale"] as? [String: Any])?["set"] as? Bool == false)
        // The first fetch, or the refetch the connect asks for.
        #expect(["success", "no-change"].contains((first["lastFetch"] as? [String: Any])?["status"] as? String))
        #expect((first["app"] as? [String: Any])?["update"] as? String == "unknown")
        #expect(first["activities"] as? Int == 0)
        // Retained: a subscriber that comes later gets it at once.
        let late = try ReportSubscriber(sandbox, port: broker.port)
        #expect(try late.waitUntilLive())
        // (A report published meanwhile may follow it, not retained.)
        let retained = late.messages.filter { $0.topic == topic && $0.retained }
        #expect(retained.count == 1, "\(late.messages.map(\.payload))")
        #expect(late.messages.first { $0.topic == topic }?.retained == true)
        #expect(retained.first?.json?["templateVersion"] as? String == "1")
        #expect(
            try eventually { try sandbox.cli("status").stdout.contains("report:       published ") },
            "\((try? sandbox.cli("status").stdout) ?? "")")
        #expect(try sandbox.cli("status").stdout.contains(" to \(topic) on 127.0.0.1:\(broker.port)"))

        // A new template, announced by a ping: one more report, with it.
        try server.serve(Sandbox.document(version: 2), etag: "\"v2\"")
        try broker.publish(Self.ping)
        #expect(
            eventually { subscriber.reports(on: topic).last?["templateVersion"] as? String == "2" },
            "\(subscriber.messages.map(\.payload))\n\(daemon.log)")
        #expect(daemon.stop() == 0)
    }

    @Test func aStalePingSetsStaleAndAFetchClearsIt() throws {
        let (sandbox, server, broker) = try setUp()
        let subscriber = try ReportSubscriber(sandbox, port: broker.port)
        #expect(try subscriber.waitUntilLive())
        let (daemon, topic) = try start(sandbox, server, subscriber)
        // The server fails: the ping's fetch cannot clear the flag.
        try server.setMode(["kind": "status", "status": 500])
        try broker.publish(Self.ping)
        #expect(
            eventually {
                guard let last = subscriber.reports(on: topic).last else { return false }
                return (last["stale"] as? [String: Any])?["set"] as? Bool == true
                    && (last["lastFetch"] as? [String: Any])?["status"] as? String == "failure"
            }, "\(subscriber.messages.map(\.payload))\n\(daemon.log)")
        let stale = try #require(subscriber.reports(on: topic).last)
        #expect((stale["stale"] as? [String: Any])?["since"] is String)
        #expect((stale["lastFetch"] as? [String: Any])?["error"] is String)
        #expect(stale["templateVersion"] as? String == "1")

        try server.serve(Sandbox.document(version: 2), etag: "\"v2\"")
        #expect(try sandbox.cli("fetch", "--wait").status == 0)
        #expect(
            eventually {
                guard let last = subscriber.reports(on: topic).last else { return false }
                return (last["stale"] as? [String: Any])?["set"] as? Bool == false
                    && last["templateVersion"] as? String == "2"
                    && (last["lastFetch"] as? [String: Any])?["status"] as? String == "success"
            }, "\(subscriber.messages.map(\.payload))\n\(daemon.log)")
        #expect(daemon.stop() == 0)
    }

    @Test func aBurstPublishesABoundedNumberOfReportsEndingWithTheLatest() throws {
        let (sandbox, server, broker) = try setUp()
        let subscriber = try ReportSubscriber(sandbox, port: broker.port)
        #expect(try subscriber.waitUntilLive())
        let (daemon, topic) = try start(sandbox, server, subscriber)
        let before = subscriber.reports(on: topic).count
        let started = Date()
        // 20 Live Activities started over MQTT in a row: each one changes the activity count.
        for index in 1...20 {
            try broker.publish(ActivityTests.message("start", id: "burst-\(index)", timestamp: ActivityTests.t0))
        }
        #expect(
            eventually { subscriber.reports(on: topic).last?["activities"] as? Int == 20 },
            "\(subscriber.messages.map(\.payload))\n\(daemon.log)")
        let elapsed = Date().timeIntervalSince(started)
        let published = subscriber.reports(on: topic).count - before
        // At most one report a second, and one for the settle at the start of the burst.
        #expect(published >= 1 && Double(published) <= elapsed + 2, "\(published) reports in \(elapsed) s")
        #expect(published < 20, "\(published) reports for 20 changes")
        #expect(daemon.stop() == 0)
    }

    @Test func theReportCarriesTheInstalledAppAndTheUpdateVerdict() throws {
        let (sandbox, server, broker) = try setUp(report: "[App]\nPackage=kiosk-app\nVersionScheme=debian")
        let dpkg = sandbox.root.appendingPathComponent("dpkg-status").path
        func install(_ version: String) throws {
            try sandbox.write("Package: kiosk-app\nStatus: install ok installed\nVersion: \(version)\n\n", to: dpkg)
        }
        try install("1.4-1")
        let offer = #"{"version":"1.5-1","download":"https://updates.example/kiosk-app_1.5-1.deb"}"#
        try server.serve(
            Sandbox.document(version: 1, extra: ["linux_recommended_update": offer]), etag: "\"v1\"")
        let subscriber = try ReportSubscriber(sandbox, port: broker.port)
        #expect(try subscriber.waitUntilLive())
        let daemon = try DaemonProcess(sandbox, environment: ["RCAGENT_DPKG_STATUS": dpkg])
        try daemon.waitUntilReady()
        let topic = "rcagent/status/\(try FirebaseSourceTests().deviceId(sandbox))"
        func app() -> [String: Any]? { subscriber.reports(on: topic).last?["app"] as? [String: Any] }
        #expect(
            eventually { app()?["installed"] as? String == "1.4-1" && app()?["update"] as? String == "recommended" },
            "\(subscriber.messages.map(\.payload))\n\(daemon.log)")
        // dpkg upgraded the app: the next fetch round sees it (even one the interval skips).
        try install("1.5-1")
        #expect(try sandbox.cli("fetch", "--wait").status == 0)
        #expect(
            eventually { app()?["installed"] as? String == "1.5-1" && app()?["update"] as? String == "none" },
            "\(subscriber.messages.map(\.payload))\n\(daemon.log)")
        // A value the checker cannot read: it cannot tell.
        try server.serve(
            Sandbox.document(version: 2, extra: ["linux_required_update": "{not json"]), etag: "\"v2\"")
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        #expect(
            eventually { app()?["update"] as? String == "unknown" },
            "\(subscriber.messages.map(\.payload))\n\(daemon.log)")
        #expect(daemon.stop() == 0)
    }

    @Test func killNineLeavesTheWillAndSIGTERMSaysOffline() throws {
        let (sandbox, server, broker) = try setUp()
        let subscriber = try ReportSubscriber(sandbox, port: broker.port)
        #expect(try subscriber.waitUntilLive())
        var (daemon, topic) = try start(sandbox, server, subscriber)
        daemon.killHard()
        #expect(
            eventually { subscriber.reports(on: topic).last?["online"] as? Bool == false },
            "\(subscriber.messages.map(\.payload))")
        // The will is the report as of the connect, offline: after a restart, the template it serves.
        daemon = try sandbox.startDaemon()
        #expect(eventually { subscriber.reports(on: topic).last?["online"] as? Bool == true })
        daemon.killHard()
        #expect(
            eventually { subscriber.reports(on: topic).last?["online"] as? Bool == false },
            "\(subscriber.messages.map(\.payload))")
        #expect(subscriber.reports(on: topic).last?["templateVersion"] as? String == "1")

        daemon = try sandbox.startDaemon()
        #expect(eventually { subscriber.reports(on: topic).last?["online"] as? Bool == true })
        let mark = subscriber.reports(on: topic).count
        #expect(daemon.stop() == 0)
        // The sentinel comes back after anything the broker published before it: a will too.
        #expect(try subscriber.waitUntilLive())
        let after = subscriber.reports(on: topic).dropFirst(mark)
        // A clean DISCONNECT: the broker sends no will, so the one offline report is the agent's own.
        #expect(after.filter { $0["online"] as? Bool == false }.count == 1, "\(subscriber.messages.map(\.payload))")
        #expect(after.last?["online"] as? Bool == false)
        #expect(!daemon.log.contains("did not acknowledge"), "\(daemon.log)")
    }

    @Test func aBrokerRestartGetsTheReportAgain() throws {
        let (sandbox, server, broker) = try setUp()
        let subscriber = try ReportSubscriber(sandbox, port: broker.port)
        #expect(try subscriber.waitUntilLive())
        let (daemon, topic) = try start(sandbox, server, subscriber)
        // Without persistence the broker forgets every retained message.
        broker.stop()
        try broker.start()
        let after = try ReportSubscriber(sandbox, port: broker.port)
        #expect(try after.waitUntilLive())
        #expect(
            eventually {
                after.messages.contains { $0.topic == topic && $0.json?["online"] as? Bool == true }
            }, "\(after.messages.map(\.payload))\n\(daemon.log)")
        // Retained again: a subscriber that comes now gets it.
        let late = try ReportSubscriber(sandbox, port: broker.port)
        #expect(try late.waitUntilLive())
        #expect(late.messages.first { $0.topic == topic }?.retained == true)
        #expect(daemon.stop() == 0)
    }

    @Test func theFirstBrokerDownTheAgentUsesTheSecond() throws {
        let dead = try RefusingPort()
        defer { withExtendedLifetime(dead) {} }  // held until the test ends
        let sandbox = try Sandbox()
        let server = try ConfigServer(in: sandbox)
        let broker = try MosquittoBroker(in: sandbox)
        try configure(sandbox, server, push: "mqtt://127.0.0.1:\(dead.port) mqtt://127.0.0.1:\(broker.port)")
        let subscriber = try ReportSubscriber(sandbox, port: broker.port)
        #expect(try subscriber.waitUntilLive())
        let (daemon, _) = try start(sandbox, server, subscriber)
        #expect(
            try eventually {
                try sandbox.cli("status").stdout.contains("push:         mqtt 127.0.0.1:\(broker.port) connected")
            }, "\(daemon.log)")
        #expect(daemon.log.contains("Failed to keep the MQTT connection to 127.0.0.1:\(dead.port)"), "\(daemon.log)")
        #expect(daemon.stop() == 0)
    }

    @Test func aLostBrokerMovesTheAgentToTheNextOne() throws {
        let sandbox = try Sandbox()
        let server = try ConfigServer(in: sandbox)
        let first = try Mosquitto(in: sandbox.root.appendingPathComponent("broker-1"))
        let second = try Mosquitto(in: sandbox.root.appendingPathComponent("broker-2"))
        try configure(sandbox, server, push: "mqtt://127.0.0.1:\(first.port) mqtt://127.0.0.1:\(second.port)")
        let onFirst = try ReportSubscriber(sandbox, port: first.port)
        #expect(try onFirst.waitUntilLive())
        let onSecond = try ReportSubscriber(sandbox, port: second.port)
        #expect(try onSecond.waitUntilLive())
        let (daemon, topic) = try start(sandbox, server, onFirst)
        #expect(onSecond.reports(on: topic).isEmpty)

        first.stop()
        #expect(
            eventually { onSecond.reports(on: topic).last?["online"] as? Bool == true },
            "\(onSecond.messages.map(\.payload))\n\(daemon.log)")
        #expect(
            try eventually {
                try sandbox.cli("status").stdout.contains("push:         mqtt 127.0.0.1:\(second.port) connected")
            })
        #expect(daemon.log.contains("MQTT connection to 127.0.0.1:\(first.port) lost"), "\(daemon.log)")
        // Pings reach it there.
        try server.serve(Sandbox.document(version: 2), etag: "\"v2\"")
        try second.publish(Self.ping)
        #expect(eventually { onSecond.reports(on: topic).last?["templateVersion"] as? String == "2" })
        #expect(daemon.stop() == 0)
    }

    /// Counts the clients that connected as `clientId` in the broker's log.
    static func connections(_ broker: Mosquitto, clientId: String) -> Int {
        let log = (try? String(contentsOf: broker.directory.appendingPathComponent("mosquitto.log"), encoding: .utf8))
        return (log ?? "").components(separatedBy: "\n").filter {
            $0.contains("New client connected") && $0.contains(" as \(clientId) ")
        }.count
    }

    @Test func reportAndPushShareOneConnectionToOneBroker() throws {
        let sandbox = try Sandbox()
        let server = try ConfigServer(in: sandbox)
        let directory = sandbox.root.appendingPathComponent("logged-broker")
        let broker = try Mosquitto(
            in: directory,
            settings: "log_dest file \(directory.path)/mosquitto.log\nlog_type notice\nconnection_messages true\n")
        try configure(sandbox, server, push: "mqtt://127.0.0.1:\(broker.port)")
        let subscriber = try ReportSubscriber(sandbox, port: broker.port)
        #expect(try subscriber.waitUntilLive())
        let (daemon, topic) = try start(sandbox, server, subscriber)
        let deviceId = String(topic.dropFirst("rcagent/status/".count))
        #expect(Self.connections(broker, clientId: deviceId) == 1)
        #expect(Self.connections(broker, clientId: deviceId + "-report") == 0)
        #expect(daemon.stop() == 0)
    }

    @Test func aReportBrokerOfItsOwnGetsAConnectionOfItsOwn() throws {
        let sandbox = try Sandbox()
        let server = try ConfigServer(in: sandbox)
        let push = try Mosquitto(in: sandbox.root.appendingPathComponent("push-broker"))
        let directory = sandbox.root.appendingPathComponent("report-broker")
        let reports = try Mosquitto(
            in: directory,
            settings: "log_dest file \(directory.path)/mosquitto.log\nlog_type notice\nconnection_messages true\n")
        try configure(
            sandbox, server, push: "mqtt://127.0.0.1:\(push.port)", report: "MQTT=mqtt://127.0.0.1:\(reports.port)")
        let subscriber = try ReportSubscriber(sandbox, port: reports.port)
        #expect(try subscriber.waitUntilLive())
        let (daemon, topic) = try start(sandbox, server, subscriber)
        let deviceId = String(topic.dropFirst("rcagent/status/".count))
        #expect(Self.connections(reports, clientId: deviceId + "-report") == 1)
        #expect(Self.connections(reports, clientId: deviceId) == 0)
        // Pushes still come over the push broker, and the report follows.
        try server.serve(Sandbox.document(version: 2), etag: "\"v2\"")
        try push.publish(Self.ping)
        #expect(eventually { subscriber.reports(on: topic).last?["templateVersion"] as? String == "2" })
        #expect(daemon.stop() == 0)
        #expect(try subscriber.waitUntilLive())
        #expect(subscriber.reports(on: topic).last?["online"] as? Bool == false)
    }

    @Test func aReportBrokerThatIsNotUpYetIsWaitedFor() throws {
        let sandbox = try Sandbox()
        let server = try ConfigServer(in: sandbox)
        let push = try Mosquitto(in: sandbox.root.appendingPathComponent("push-broker"))
        let reports = try Mosquitto(in: sandbox.root.appendingPathComponent("report-broker"))
        reports.stop()
        try configure(
            sandbox, server, push: "mqtt://127.0.0.1:\(push.port)", report: "MQTT=mqtt://127.0.0.1:\(reports.port)")
        try server.serve(Sandbox.document(version: 1), etag: "\"v1\"")
        let daemon = try sandbox.startDaemon()
        func reportLine() throws -> String {
            try sandbox.cli("status").stdout.split(separator: "\n").first { $0.hasPrefix("report:") }.map(String.init)
                ?? ""
        }
        #expect(
            try eventually { try reportLine() == "report:       waiting for the broker (127.0.0.1:\(reports.port))" },
            "\((try? reportLine()) ?? "")")
        // The push channel does not wait for the report's broker.
        #expect(eventually { daemon.log.contains("MQTT connected to 127.0.0.1:\(push.port)") }, "\(daemon.log)")

        try reports.start()
        let subscriber = try ReportSubscriber(sandbox, port: reports.port)
        #expect(try subscriber.waitUntilLive())
        let topic = "rcagent/status/\(try FirebaseSourceTests().deviceId(sandbox))"
        #expect(
            eventually(30) { subscriber.reports(on: topic).last?["templateVersion"] as? String == "1" },
            "\(subscriber.messages.map(\.payload))\n\(daemon.log)")
        #expect(
            try eventually { try reportLine().hasPrefix("report:       published ") }, "\((try? reportLine()) ?? "")")
        #expect(daemon.stop() == 0)
    }

    @Test func aReloadToAnotherTopicClearsTheOldReport() throws {
        let (sandbox, server, broker) = try setUp()
        let subscriber = try ReportSubscriber(sandbox, port: broker.port, topic: "#")
        #expect(try subscriber.waitUntilLive())
        let (daemon, topic) = try start(sandbox, server, subscriber)
        let deviceId = String(topic.dropFirst("rcagent/status/".count))
        try configure(
            sandbox, server, push: "mqtt://127.0.0.1:\(broker.port)",
            report: "MQTTStatusTopic=fleet/devices")
        #expect(try sandbox.cli("reload").status == 0)
        #expect(
            eventually { subscriber.reports(on: "fleet/devices/\(deviceId)").last?["online"] as? Bool == true },
            "\(subscriber.messages.map(\.payload))\n\(daemon.log)")
        #expect(eventually { subscriber.messages.last { $0.topic == topic }?.payload == "" })
        // Nothing is retained on the old topic any more.
        let late = try ReportSubscriber(sandbox, port: broker.port, topic: "#")
        #expect(try late.waitUntilLive())
        #expect(!late.messages.contains { $0.topic == topic }, "\(late.messages.map(\.topic))")
        #expect(late.messages.contains { $0.topic == "fleet/devices/\(deviceId)" && $0.retained })
        #expect(daemon.stop() == 0)
    }

    @Test func hostileRetainedMessagesChangeNothing() throws {
        let (sandbox, server, broker) = try setUp()
        // The device id is known once the state exists: a first run makes it.
        try server.serve(Sandbox.document(version: 1), etag: "\"v1\"")
        var daemon = try sandbox.startDaemon()
        let deviceId = try FirebaseSourceTests().deviceId(sandbox)
        #expect(daemon.stop() == 0)
        let topic = "rcagent/status/\(deviceId)"
        let garbage = "{\"deviceId\":\"\(deviceId)\",\"online\":\"perhaps\"} \u{1b}[31m"
        try broker.publish(garbage, topic: topic, retain: true)
        try broker.publish("not json at all", topic: "PUSH_RC", retain: true)
        try broker.publish(String(repeating: "[", count: 10_000), topic: "PUSH_RC/\(deviceId)", retain: true)

        daemon = try sandbox.startDaemon()
        let subscriber = try ReportSubscriber(sandbox, port: broker.port)
        #expect(try subscriber.waitUntilLive())
        #expect(
            eventually {
                subscriber.reports(on: topic).last.map {
                    $0["online"] as? Bool == true && $0["templateVersion"] as? String == "1"
                } ?? false
            }, "\(subscriber.messages.map(\.payload))\n\(daemon.log)")
        #expect(eventually { daemon.log.contains("Ignoring an MQTT message on PUSH_RC") }, "\(daemon.log)")
        // Still answering, still serving, nothing stale.
        #expect(try sandbox.cli("get", "key_0").stdout == "v1\n")
        #expect((subscriber.reports(on: topic).last?["stale"] as? [String: Any])?["set"] as? Bool == false)
        #expect(daemon.stop() == 0)
    }
}
