import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A real 3-node cluster of Debian's nats-server with its MQTT listener: a distributed broker a
/// fleet spreads over. Each node has its own ports, `server_name`, JetStream store in `directory`
/// and log file, and routes to the other two.
///
/// What nats-server (2.9) needs for MQTT, and what it gives: MQTT is built on JetStream, which
/// must be on, and clustered JetStream needs a `server_name` per node and the cluster formed (a
/// meta leader elected) before the first MQTT client connects. Sessions, QoS 1 subscriptions and
/// retained messages live in replicated streams (`$MQTT_sess`, `$MQTT_msgs`, `$MQTT_rmsgs`), so a
/// persistent session (clean session off, client id = device id) and the retained reports survive
/// the loss of one node and follow a client to another node. Last wills work. QoS 2 is not
/// supported: a QoS 2 PUBLISH or SUBSCRIBE closes the connection.
public final class NATSCluster {
    /// One node: its name and loopback ports.
    public struct Node: Sendable {
        public let name: String
        public let clientPort: Int
        public let mqttPort: Int
        /// The HTTP monitoring port (`/healthz`, `/jsz`, `/routez`).
        public let monitorPort: Int
        public let routePort: Int
        public var mqttURL: String { "mqtt://127.0.0.1:\(mqttPort)" }
    }

    public let nodes: [Node]
    public let directory: URL
    private var servers: [Subprocess?]

    /// Starts `size` nodes and returns once the cluster has formed (see ``waitUntilFormed(timeout:)``).
    /// `settings`: more lines of every node's config (`max_payload`).
    public init(in directory: URL, size: Int = 3, settings: String = "") throws {
        self.directory = directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var nodes: [Node] = []
        for index in 1...size {
            nodes.append(
                Node(
                    name: "n\(index)", clientPort: try Mosquitto.freePort(), mqttPort: try Mosquitto.freePort(),
                    monitorPort: try Mosquitto.freePort(), routePort: try Mosquitto.freePort()))
        }
        self.nodes = nodes
        servers = Array(repeating: nil, count: size)
        let routes = nodes.map { "nats-route://127.0.0.1:\($0.routePort)" }.joined(separator: ", ")
        for node in nodes {
            let path = directory.appendingPathComponent(node.name).path
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            // The log goes to a file: nothing reads the launcher's pipes while the node runs, and a
            // node blocked on a full stderr pipe would stop serving.
            let config = """
                server_name: \(node.name)
                listen: 127.0.0.1:\(node.clientPort)
                http: 127.0.0.1:\(node.monitorPort)
                log_file: "\(path)/nats.log"
                max_connections: 65536
                jetstream { store_dir: "\(path)/jetstream" }
                cluster {
                    name: rcfleet
                    listen: 127.0.0.1:\(node.routePort)
                    routes: [\(routes)]
                }
                mqtt { listen: 127.0.0.1:\(node.mqttPort) }
                \(settings)

                """
            try config.write(toFile: path + "/nats.conf", atomically: true, encoding: .utf8)
        }
        for index in nodes.indices { try start(index) }
        do {
            try waitUntilFormed()
            try warmUp()
        } catch {
            for index in nodes.indices { kill(index) }
            throw error
        }
    }

    /// The first MQTT client of the cluster makes it create its MQTT streams (sessions, messages,
    /// retained messages), replicated over the three nodes; until they have leaders, each node
    /// accepts MQTT connections and drops them again. One QoS 1 publish per node, tried until it
    /// is acknowledged, gets that done before a test's clients connect, so they stay where they
    /// connect first.
    private func warmUp() throws {
        for index in nodes.indices {
            guard eventually(30, { (try? publish("{}", topic: "rcfleet-ready", on: index)) != nil }) else {
                throw TestFailure("node \(nodes[index].name) took no MQTT publish: \(log(index).suffix(2000))")
            }
        }
    }

    deinit {
        for index in nodes.indices { kill(index) }
    }

    /// Starts node `index` (again, with the JetStream store it had) and returns once it listens
    /// for MQTT; ``waitUntilFormed(timeout:)`` says when the cluster has it back.
    public func start(_ index: Int) throws {
        let node = nodes[index]
        let config = directory.appendingPathComponent(node.name).appendingPathComponent("nats.conf").path
        servers[index] = try Subprocess("/usr/sbin/nats-server", ["-c", config])
        guard eventually(20, { Mosquitto.accepts(port: node.mqttPort) }) else {
            kill(index)
            throw TestFailure("nats-server \(node.name) did not start: \(log(index).suffix(2000))")
        }
    }

    /// Kills node `index` by its pid (SIGKILL: a crash, no goodbye to its clients or peers).
    public func kill(_ index: Int) {
        guard let server = servers[index] else { return }
        Glibc.kill(server.pid, SIGKILL)
        _ = server.finish(bound: .seconds(10))
        servers[index] = nil
    }

    /// The pid of node `index`, nil when it is not running.
    public func pid(_ index: Int) -> pid_t? { servers[index]?.pid }

    /// Node `index`'s log.
    public func log(_ index: Int) -> String {
        let path = directory.appendingPathComponent(nodes[index].name).appendingPathComponent("nats.log").path
        return (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }

    /// Waits until every running node routes to every other running one and sees a JetStream meta
    /// leader that is itself running (after a kill the others first still name the dead leader):
    /// only then can MQTT clients create or resume sessions. Polled on the monitoring endpoints,
    /// which is the cluster's own account of its state.
    public func waitUntilFormed(timeout: Double = 30) throws {
        let running = nodes.indices.filter { servers[$0] != nil }
        let names = Set(running.map { nodes[$0].name })
        let formed = eventually(timeout) {
            running.allSatisfy { index in
                let port = nodes[index].monitorPort
                guard let jsz = Self.monitor(port: port, path: "/jsz"),
                    let meta = jsz["meta_cluster"] as? [String: Any], let leader = meta["leader"] as? String,
                    names.contains(leader),
                    let routez = Self.monitor(port: port, path: "/routez"),
                    let routes = routez["num_routes"] as? Int, routes >= running.count - 1,
                    let health = Self.monitor(port: port, path: "/healthz"), health["status"] as? String == "ok"
                else { return false }
                return true
            }
        }
        guard formed else { throw TestFailure("the NATS cluster did not form within \(timeout) s") }
    }

    /// The MQTT client ids connected to node `index` now (its `/connz`); empty when it does not answer.
    public func mqttClients(on index: Int) -> Set<String> {
        guard let connz = Self.monitor(port: nodes[index].monitorPort, path: "/connz?limit=100000"),
            let connections = connz["connections"] as? [[String: Any]]
        else { return [] }
        return Set(connections.compactMap { $0["mqtt_client"] as? String })
    }

    /// Publishes with mosquitto_pub at QoS 1 on node `index`'s MQTT listener.
    public func publish(_ payload: String, topic: String = "PUSH_RC", on index: Int = 0, retain: Bool = false) throws {
        let result = try runProcess(
            "/usr/bin/mosquitto_pub",
            ["-h", "127.0.0.1", "-p", String(nodes[index].mqttPort), "-q", "1", "-t", topic, "-m", payload]
                + (retain ? ["-r"] : []))
        guard result.status == 0 else { throw TestFailure("mosquitto_pub on \(nodes[index].name): \(result.stderr)") }
    }

    /// GETs a monitoring endpoint and parses its JSON object; nil when the node does not answer
    /// (yet) or answers something else.
    static func monitor(port: Int, path: String) -> [String: Any]? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { return nil }
        let request = Array("GET \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count
        else { return nil }
        // HTTP/1.0: the server closes the connection after the answer.
        var answer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while answer.count < 1 << 20 {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { break }
            answer += chunk[0..<n]
        }
        let separator = Array("\r\n\r\n".utf8)
        guard let start = answer.indices.first(where: { answer[$0...].starts(with: separator) }) else { return nil }
        let body = Data(answer[(start + separator.count)...])
        return (try? JSONSerialization.jsonObject(with: body)) as? [String: Any]
    }
}
