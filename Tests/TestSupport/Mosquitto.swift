import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A real mosquitto broker on a free loopback port, for every suite that talks MQTT: started from
/// a config the caller writes in `directory`, stopped by its pid.
public final class Mosquitto {
    public let port: Int
    public let directory: URL
    private let config: String
    private var process: Process?

    /// `settings`: more `mosquitto.conf` lines (TLS files, persistence).
    public init(in directory: URL, settings: String = "") throws {
        self.directory = directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        port = try Self.freePort()
        // user root: mosquitto would otherwise drop to its own user and not read the test's files.
        config = "listener \(port) 127.0.0.1\nallow_anonymous true\nuser root\n" + settings
        try config.write(to: directory.appendingPathComponent("mosquitto.conf"), atomically: true, encoding: .utf8)
        try start()
    }

    deinit { stop() }

    /// Starts the broker (again) and returns once it accepts connections.
    public func start() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/mosquitto")
        process.arguments = ["-c", directory.appendingPathComponent("mosquitto.conf").path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        guard eventually(10, { Self.accepts(port: port) }) else { throw TestFailure("mosquitto did not start") }
    }

    /// Kills the broker (SIGKILL: a broker that must not say goodbye to its clients).
    public func stop() {
        guard let process, process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Publishes with mosquitto_pub at QoS 1 (`retain`: kept by the broker for every later subscriber).
    public func publish(_ payload: String, topic: String = "PUSH_RC", retain: Bool = false) throws {
        let publisher = Process()
        publisher.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_pub")
        publisher.arguments =
            ["-h", "127.0.0.1", "-p", String(port), "-q", "1", "-t", topic, "-m", payload] + (retain ? ["-r"] : [])
        try publisher.run()
        publisher.waitUntilExit()
        guard publisher.terminationStatus == 0 else { throw TestFailure("mosquitto_pub failed") }
    }

    /// Publishes the contents of `file` (any size: not an argument) with mosquitto_pub at QoS 1.
    public func publish(file: String, topic: String = "PUSH_RC", retain: Bool = false) throws {
        try Self.publish(file: file, topic: topic, retain: retain, port: port)
    }

    /// The same to any MQTT broker on a loopback `port` (a NATS node's MQTT listener).
    public static func publish(file: String, topic: String, retain: Bool, port: Int) throws {
        let publisher = Process()
        publisher.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_pub")
        publisher.arguments =
            ["-h", "127.0.0.1", "-p", String(port), "-q", "1", "-t", topic, "-f", file] + (retain ? ["-r"] : [])
        try publisher.run()
        publisher.waitUntilExit()
        guard publisher.terminationStatus == 0 else { throw TestFailure("mosquitto_pub -f \(file) failed") }
    }

    /// A loopback TCP port nobody listens on (the kernel picks it), and none this process was
    /// handed before: a port is only bound for the moment it is picked, so the kernel may pick it
    /// again at once, and a caller picking several before starting anything (a NATS cluster's twelve)
    /// got one twice (a node then failed with "address already in use").
    public static func freePort() throws -> Int {
        for _ in 0..<100 {
            let port = try unusedPort()
            if handedOut.withLock({ $0.insert(port).inserted }) { return port }
        }
        throw TestFailure("no free port that was not handed out before")
    }

    private static let handedOut = Mutex<Set<Int>>([])

    private static func unusedPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { throw TestFailure("no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether something accepts TCP connections on the loopback `port`.
    public static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        } == 0
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return address
    }
}
