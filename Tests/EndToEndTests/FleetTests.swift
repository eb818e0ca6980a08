import Foundation
import Glibc
import RCCore
import TestSupport
import Testing

/// Issue 19's fleet, small: a dozen real agents, a real nginx serving the config document, pushed
/// over (a) one mosquitto and (b) a 3-node NATS cluster. What the fleet did is read the way an
/// operator reads it, from the agents' retained reports and nginx's access log, never by asking
/// each agent. `bench/fleet.py` runs the same at 1,000 agents.
@Suite struct FleetTests {
    static let size = 12
    static let topic = "rcfleet/status"

    /// One ping: every agent reports the new version, and nginx served each exactly one request
    /// for it (a conditional GET answered 200).
    @Test func onePingReachesTheWholeFleetOnMosquitto() throws {
        let fleet = try Fleet(size: Self.size)
        let broker = try Mosquitto(in: fleet.root.appendingPathComponent("broker"))
        let reports = try ReportWatcher(port: broker.port, topic: Self.topic)
        defer { reports.stop() }
        try fleet.start { _ in ["mqtt://127.0.0.1:\(broker.port)"] }
        defer { fleet.stop() }
        #expect(reports.waitUntil { fleet.allReport(version: "1", in: $0) }, "\(reports.summary)\n\(fleet.logs)")

        let before = fleet.nginx.requests.count
        try fleet.nginx.serve(Fleet.document(version: 2))
        try broker.publish(#"{"data":{"CONFIG_STATE":"STALE","templateVersion":"2"}}"#)
        #expect(reports.waitUntil { fleet.allReport(version: "2", in: $0) }, "\(reports.summary)\n\(fleet.logs)")
        let requests = Array(fleet.nginx.requests.dropFirst(before))
        #expect(fleet.fetchedOnce(requests), "\(requests)")
        #expect(requests.filter { $0.status == 200 }.allSatisfy { !$0.ifNoneMatch.isEmpty }, "\(requests)")
        // Over the whole run: the start's fetch, at most one conditional fetch for the connect,
        // and the ping's.
        #expect(fleet.perAgent(fleet.nginx.requests).allSatisfy { $0 == 2 || $0 == 3 }, "\(fleet.nginx.requests)")
    }

    /// The same on a NATS cluster, agents spread over its nodes (each agent's broker list starts
    /// with its own node). Then one node is killed: its agents move to the next node in their
    /// list, and the next ping, published on a surviving node, still reaches every agent.
    @Test func theFleetConvergesOnANATSClusterAndSurvivesANodeKilled() throws {
        let fleet = try Fleet(size: Self.size)
        let cluster = try NATSCluster(in: fleet.root.appendingPathComponent("nats"))
        let reports = try ReportWatcher(port: cluster.nodes[0].mqttPort, topic: Self.topic)
        defer { reports.stop() }
        let nodes = cluster.nodes.count
        try fleet.start { index in (0..<nodes).map { cluster.nodes[(index + $0) % nodes].mqttURL } }
        defer { fleet.stop() }
        #expect(reports.waitUntil { fleet.allReport(version: "1", in: $0) }, "\(reports.summary)\n\(fleet.logs)")
        let ids = try (0..<Self.size).map { try fleet.deviceId($0) }
        // Every agent is on its own node (the first of its list).
        for node in 0..<nodes {
            let home = Set(ids.indices.filter { $0 % nodes == node }.map { ids[$0] })
            #expect(eventually { home.isSubset(of: cluster.mqttClients(on: node)) }, "node \(node)")
        }

        // NATS makes each subscription a JetStream consumer, and on a loaded machine a consumer
        // may deliver only a while after its SUBACK: a ping published before then never reaches
        // that agent. A ping announcing the current version changes nothing, and each agent logs
        // that it ignores it: once every agent has logged one, every subscription delivers.
        let current = #"{"data":{"CONFIG_STATE":"STALE","templateVersion":"1"}}"#
        #expect(
            eventually(60) {
                try? cluster.publish(current, on: 0)
                return fleet.everyLog(contains: "Ignoring a stale ping from mqtt PUSH_RC for template 1")
            }, "\(fleet.logs)")

        var before = fleet.nginx.requests.count
        try fleet.nginx.serve(Fleet.document(version: 2))
        #expect(Self.ping(version: 2, cluster, fleet, reports), "\(reports.summary)\n\(fleet.logs)")
        var requests = Array(fleet.nginx.requests.dropFirst(before))
        #expect(fleet.fetchedOnce(requests), "\(requests)")

        before = fleet.nginx.requests.count
        let victim = 1
        cluster.kill(victim)
        let moved = ids.indices.filter { $0 % nodes == victim }
        // The next node of their list takes them, and each fetches once on reconnecting (a ping
        // may have been missed while it was away), which nginx answers "not modified".
        let next = (victim + 1) % nodes
        #expect(
            eventually(30) { Set(moved.map { ids[$0] }).isSubset(of: cluster.mqttClients(on: next)) },
            "\(fleet.logs)")
        #expect(
            eventually(30) {
                let counts = fleet.perAgent(Array(fleet.nginx.requests.dropFirst(before)))
                return moved.allSatisfy { counts[$0] >= 1 }
            }, "\(fleet.logs)")
        requests = Array(fleet.nginx.requests.dropFirst(before))
        #expect(requests.allSatisfy { $0.status == 304 }, "\(requests)")
        let counts = fleet.perAgent(requests)
        #expect(counts.indices.allSatisfy { moved.contains($0) || counts[$0] == 0 }, "\(requests)")

        try cluster.waitUntilFormed()
        before = fleet.nginx.requests.count
        let connectsBefore = fleet.connects
        try fleet.nginx.serve(Fleet.document(version: 3))
        #expect(Self.ping(version: 3, cluster, fleet, reports), "\(reports.summary)\n\(fleet.logs)")
        requests = Array(fleet.nginx.requests.dropFirst(before))
        let reconnects = zip(fleet.connects, connectsBefore).map { $0 - $1 }
        // One fetch of the new version each. The cluster may still drop a moved agent's new
        // connection, more than once, while it elects leaders for what the dead node led: each
        // such reconnect costs that agent one more conditional fetch, never more (a moved agent's
        // from just before the window may land in it too).
        let fetched = fleet.perAgent(requests.filter { $0.status == 200 })
        #expect(fetched == Array(repeating: 1, count: Self.size), "\(requests)\n\(fleet.logs)")
        let extra = requests.filter { $0.status != 200 }
        #expect(extra.allSatisfy { $0.status == 304 }, "\(requests)")
        let allowed = reconnects.indices.map { reconnects[$0] + (moved.contains($0) ? 1 : 0) }
        #expect(
            zip(fleet.perAgent(extra), allowed).allSatisfy { $0 <= $1 }, "\(requests)\n\(reconnects)\n\(fleet.logs)")
    }
}

extension FleetTests {
    /// Publishes the stale ping announcing `version` on node 0 and waits until every agent reports
    /// it; while some do not, publishes it again every `every` seconds, `times` pings at most, as
    /// an operator would. NATS 2.9 loses a QoS 1 message now and then on a loaded cluster: every
    /// subscription whose JetStream consumer is led by one lagging node misses it, while all others
    /// get it (docs/fleet.md, "A NATS cluster with MQTT"). An agent that already has the version
    /// ignores the repeat, so each still fetches the new version once. Until the streams a dead
    /// node led have new leaders, the survivors may refuse MQTT connections: each publish is tried
    /// again for a while, too. Whether every agent reported the version.
    static func ping(
        version: Int, _ cluster: NATSCluster, _ fleet: Fleet, _ reports: ReportWatcher, times: Int = 3,
        every: Double = 10
    ) -> Bool {
        let payload = #"{"data":{"CONFIG_STATE":"STALE","templateVersion":"\#(version)"}}"#
        for attempt in 1...times {
            guard eventually(30, { (try? cluster.publish(payload, on: 0)) != nil }) else { return false }
            if reports.waitUntil(timeout: every, { fleet.allReport(version: String(version), in: $0) }) { return true }
            // Which agents missed it, for whoever reads CI's log: the test passes if a later ping reaches them.
            print("FleetTests: ping \(attempt) for template \(version) did not reach every agent: \(reports.summary)")
        }
        return false
    }
}

/// `size` real rcagentd processes in one private directory, each with its own state, socket and
/// config, fetching `config.json?agent=I` from one real nginx (the query tells nginx's log which
/// agent asked), `MinimumFetchInterval=1d` so that only pushes fetch, `Jitter=0`, reporting on
/// ``FleetTests/topic``. Stopped with SIGKILL (the daemons inherit the test runner's blocked signals).
final class Fleet {
    let root: URL
    let size: Int
    let nginx: Nginx
    private var daemons: [Process] = []

    init(size: Int) throws {
        // Short: each agent's Unix socket path must fit in 107 bytes.
        root = URL(fileURLWithPath: "/tmp").appendingPathComponent("rcf-\(UUID().uuidString.prefix(8))")
        self.size = size
        nginx = try Nginx(in: root.appendingPathComponent("nginx"))
        try nginx.serve(Self.document(version: 1))
    }

    deinit {
        stop()
        nginx.stop()
        try? FileManager.default.removeItem(at: root)
    }

    static func document(version: Int) -> String {
        #"{"state":"UPDATE","templateVersion":"\#(version)","entries":{"banner":"v\#(version)"}}"#
    }

    func directory(_ index: Int) -> URL { root.appendingPathComponent("a\(index)") }

    /// Writes each agent's config (`brokers`: its [Push] MQTT= list) and starts them all.
    func start(brokers: (Int) -> [String]) throws {
        for index in 0..<size {
            let path = directory(index).path
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            try "{}".write(toFile: path + "/defaults.json", atomically: true, encoding: .utf8)
            let config = """
                [Agent]
                StateDirectory=\(path)/state
                Socket=\(path)/agent.sock
                SocketGroup=
                Defaults=\(path)/defaults.json
                MinimumFetchInterval=1d
                [Source]
                Type=http
                URL=\(nginx.url(query: "agent=\(index)"))
                [Push]
                MQTT=\(brokers(index).joined(separator: " "))
                Jitter=0
                [Report]
                MQTTStatusTopic=\(FleetTests.topic)

                """
            try config.write(toFile: path + "/agent.conf", atomically: true, encoding: .utf8)
            let process = Process()
            process.executableURL = Binaries.url("rcagentd")
            process.arguments = ["--config", path + "/agent.conf"]
            var environment = ProcessInfo.processInfo.environment
            environment.removeValue(forKey: "RCAGENT_CONFIG")
            environment.removeValue(forKey: "NOTIFY_SOCKET")
            process.environment = environment
            try #require(FileManager.default.createFile(atPath: path + "/daemon.log", contents: nil))
            let log = FileHandle(forWritingAtPath: path + "/daemon.log")
            process.standardOutput = log
            process.standardError = log
            try process.run()
            daemons.append(process)
        }
    }

    func stop() {
        for process in daemons where process.isRunning { kill(process.processIdentifier, SIGKILL) }
        for process in daemons { process.waitUntilExit() }
        daemons = []
    }

    /// The device id agent `index` reports under (its `rcagent status --json`).
    func deviceId(_ index: Int) throws -> String {
        let status = try runProcess(
            Binaries.url("rcagent").path, ["status", "--json", "--config", directory(index).path + "/agent.conf"])
        let json = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        return try #require(json?["deviceId"] as? String, "\(status.stderr)")
    }

    /// Whether `size` distinct devices report `version`, online.
    func allReport(version: String, in reports: [String: DeviceReport]) -> Bool {
        reports.values.filter { $0.online && $0.templateVersion == version }.count == size
    }

    /// Whether `requests`, those of one ping, fetched the new version exactly once per agent (one
    /// 200 each) and nothing else but conditional fetches answered 304: an agent also fetches once
    /// when its MQTT connection comes up (a ping may have been missed), and at start that fetch can
    /// reach nginx after the agent's first report, so inside the ping's window.
    func fetchedOnce(_ requests: [Nginx.Request]) -> Bool {
        perAgent(requests.filter { $0.status == 200 }) == Array(repeating: 1, count: size)
            && requests.allSatisfy { $0.status == 200 || $0.status == 304 }
    }

    /// How many of `requests` each agent made, by agent index.
    func perAgent(_ requests: [Nginx.Request]) -> [Int] {
        (0..<size).map { index in requests.filter { $0.uri.hasSuffix("?agent=\(index)") }.count }
    }

    /// Agent `index`'s log so far.
    func log(_ index: Int) -> String {
        (try? String(contentsOfFile: directory(index).path + "/daemon.log", encoding: .utf8)) ?? ""
    }

    /// How many times each agent's MQTT connection came up so far (its log's "MQTT connected to" lines).
    var connects: [Int] {
        (0..<size).map { log($0).components(separatedBy: "MQTT connected to ").count - 1 }
    }

    /// Whether every agent's log holds `text`.
    func everyLog(contains text: String) -> Bool {
        (0..<size).allSatisfy { log($0).contains(text) }
    }

    /// Every agent's log, for a failure message.
    var logs: String {
        (0..<size).map { "--- agent \($0)\n" + log($0) }.joined()
    }
}

/// The fleet as an operator sees it: one `mosquitto_sub` on `<topic>/+` (retained reports arrive
/// at once, then every change), each report read with RCCore's strict reader, the latest per
/// device kept. Waiting is on its arrivals, not on a timer.
final class ReportWatcher: @unchecked Sendable {
    private let process = Process()
    private let output = Pipe()
    private let condition = NSCondition()
    private var latest: [String: DeviceReport] = [:]
    private var rejected: [String] = []
    private var ended = false

    init(port: Int, topic: String) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_sub")
        process.arguments = ["-h", "127.0.0.1", "-p", String(port), "-q", "1", "-v", "-t", topic + "/+"]
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let thread = Thread { [self] in read() }
        thread.start()
    }

    /// Kills the subscriber; the reader thread ends at the end of its output.
    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    private func read() {
        let fd = output.fileHandleForReading.fileDescriptor
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { break }
            pending += chunk[0..<n]
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                received(pending[..<newline])
                pending.removeSubrange(...newline)
            }
        }
        condition.lock()
        ended = true
        condition.broadcast()
        condition.unlock()
    }

    /// One `topic payload` line of `mosquitto_sub -v`.
    private func received(_ line: ArraySlice<UInt8>) {
        guard let space = line.firstIndex(of: UInt8(ascii: " ")) else { return }
        let topic = String(decoding: line[..<space], as: UTF8.self)
        condition.lock()
        defer { condition.unlock() }
        do {
            let report = try DeviceReport(parsing: line[(space + 1)...])
            if topic.hasSuffix("/" + report.deviceId) {
                latest[report.deviceId] = report
            } else {
                rejected.append("\(topic): a report of \(report.deviceId)")
            }
        } catch {
            rejected.append("\(topic): \(error)")
        }
        condition.broadcast()
    }

    /// Waits until the latest reports satisfy `predicate`; false after `timeout` seconds (a failure bound).
    func waitUntil(timeout: Double = 30, _ predicate: ([String: DeviceReport]) -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while !predicate(latest) {
            if ended || !condition.wait(until: deadline) { return predicate(latest) }
        }
        return rejected.isEmpty
    }

    /// What was received, for a failure message.
    var summary: String {
        condition.lock()
        defer { condition.unlock() }
        let versions = latest.values.map { "\($0.deviceId): \($0.templateVersion ?? "-") online \($0.online)" }
        return "reports: \(versions.sorted().joined(separator: "; ")); rejected: \(rejected)"
    }
}
