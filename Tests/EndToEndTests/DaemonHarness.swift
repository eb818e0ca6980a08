import Foundation
import Glibc
import TestSupport
import Testing

/// Binds `fd` to the Unix socket path `path`; `bind`'s result.
func bindUnix(_ fd: Int32, _ path: String) -> Int32 {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
}

/// A datagram socket standing in for systemd's NOTIFY_SOCKET: the daemon's sd_notify messages
/// arrive here in order. Like systemd, it drains the socket all the time (a full queue would
/// block the sender), keeping the messages for the test to read.
final class NotifySocket: @unchecked Sendable {
    let path: String
    private let fd: Int32
    private let condition = NSCondition()
    private var received: [String] = []
    private var closed = false

    init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard bindUnix(fd, path) == 0 else { throw POSIXError(.EADDRINUSE) }
        let thread = Thread { [self] in drain() }
        thread.start()
    }

    deinit {
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }

    private func drain() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            condition.lock()
            if n > 0 {
                received.append(String(decoding: buffer[0..<n], as: UTF8.self))
            } else if n == 0 || (errno != EINTR) {
                closed = true
            }
            condition.broadcast()
            condition.unlock()
            if closed { return }
        }
    }

    /// The next message, or nil after `timeout` seconds without one.
    func next(timeout: Double = 20) -> String? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while received.isEmpty && !closed {
            if !condition.wait(until: deadline) { return nil }
        }
        return received.isEmpty ? nil : received.removeFirst()
    }

    /// Messages up to and including the first that satisfies `predicate`.
    func messages(until predicate: (String) -> Bool, timeout: Double = 20) -> [String] {
        var seen: [String] = []
        while let message = next(timeout: timeout) {
            seen.append(message)
            if predicate(message) { break }
        }
        return seen
    }
}

/// One running `rcagentd`, started as systemd would (NOTIFY_SOCKET), its log in a file.
final class DaemonProcess {
    let process = Process()
    let notify: NotifySocket
    let logPath: String

    /// `networkNamespace`: run inside that network namespace (`ip netns exec`). `executable`:
    /// another long-running program of the package (`rcadmin` for its relay).
    init(
        _ sandbox: Sandbox, arguments: [String]? = nil, environment: [String: String] = [:],
        networkNamespace: String? = nil, executable: String = "rcagentd"
    ) throws {
        notify = try NotifySocket(
            path: sandbox.root.appendingPathComponent("notify-\(UUID().uuidString.prefix(6))").path)
        logPath = sandbox.root.appendingPathComponent("daemon-\(UUID().uuidString.prefix(6)).log").path
        try #require(FileManager.default.createFile(atPath: logPath, contents: nil), "cannot create \(logPath)")
        let command = [Binaries.url(executable).path] + (arguments ?? ["--config", sandbox.configPath])
        let wrapped = inNetworkNamespace(networkNamespace, command)
        process.executableURL = URL(fileURLWithPath: wrapped[0])
        process.arguments = Array(wrapped.dropFirst())
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "RCAGENT_CONFIG")
        env["NOTIFY_SOCKET"] = notify.path
        env.merge(environment) { $1 }
        process.environment = env
        let log = FileHandle(forWritingAtPath: logPath)!
        process.standardError = log
        process.standardOutput = log
        try process.run()
    }

    /// Waits for READY=1 and returns every notify message up to it.
    @discardableResult
    func waitUntilReady() throws -> [String] {
        let messages = notify.messages(until: { $0.contains("READY=1") })
        guard messages.last?.contains("READY=1") == true else {
            throw DaemonError("no READY=1 from rcagentd; log:\n\(log)")
        }
        return messages
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// SIGTERM and wait; returns the exit status.
    @discardableResult
    func stop() -> Int32 {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        process.waitUntilExit()
        return process.terminationStatus
    }

    func killHard() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

struct DaemonError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A raw control-socket connection, for `watch` and for abusing the protocol.
final class SocketClient {
    let fd: Int32
    private var buffer: [UInt8] = []

    init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard rc == 0 else {
            close(fd)
            throw DaemonError("connect \(path): errno \(errno)")
        }
    }

    deinit { close(fd) }

    /// Writes all of `bytes`; false when the peer closed.
    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            offset += n
        }
        return true
    }

    @discardableResult
    func write(_ text: String) -> Bool { write(Array(text.utf8)) }

    /// The next line, or nil at end of stream or after `timeout` seconds.
    func readLine(timeout: Double = 20) -> String? {
        var value = timeval(tv_sec: Int(timeout), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return nil }
            buffer.append(contentsOf: chunk[0..<n])
        }
    }

    func request(_ line: String) -> [String: Any]? {
        guard write(line + "\n"), let response = readLine() else { return nil }
        return try? JSONSerialization.jsonObject(with: Data(response.utf8)) as? [String: Any]
    }

    /// Subscribes to events; returns false if the daemon refused.
    func watch() -> Bool { request(#"{"op":"watch"}"#)?["ok"] as? Bool == true }

    /// Reads events until one satisfies `predicate`; returns it (nil on timeout or close).
    func event(timeout: Double = 20, where predicate: ([String: Any]) -> Bool) -> [String: Any]? {
        while let line = readLine(timeout: timeout) {
            if let event = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], predicate(event)
            {
                return event
            }
        }
        return nil
    }
}

extension Sandbox {
    /// A fetch-response document whose every value carries `version`.
    static func document(version: Int, keys: Int = 3, extra: [String: String] = [:]) -> String {
        var entries: [String: String] = extra
        for i in 0..<keys { entries["key_\(i)"] = "v\(version)" }
        let data = try! JSONSerialization.data(
            withJSONObject: ["state": "UPDATE", "templateVersion": "\(version)", "entries": entries],
            options: [.sortedKeys])
        return String(decoding: data, as: UTF8.self)
    }

    /// Replaces the source file the way careful writers do: a new file renamed over the old.
    func publish(_ document: String) throws {
        let temporary = remotePath + ".new"
        try document.write(toFile: temporary, atomically: false, encoding: .utf8)
        guard rename(temporary, remotePath) == 0 else { throw DaemonError("rename failed") }
    }

    func startDaemon() throws -> DaemonProcess {
        let daemon = try DaemonProcess(self)
        try daemon.waitUntilReady()
        return daemon
    }

    /// Starts `rcagent hold --reason REASON -- sh -c COMMAND` (the config named with `--config`, not
    /// `RCAGENT_CONFIG`) and returns once its command runs: the command first touches a marker file.
    func startHold(reason: String, command: String) throws -> Subprocess {
        try FileManager.default.createDirectory(atPath: statePath, withIntermediateDirectories: true)
        let marker = root.appendingPathComponent("hold-\(UUID().uuidString)").path
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "RCAGENT_CONFIG")
        let hold = try Subprocess(
            Binaries.url("rcagent").path,
            ["hold", "--config", configPath, "--reason", reason, "--", "sh", "-c", "touch \(marker); \(command)"],
            environment: environment, input: true)
        guard eventually(60, { FileManager.default.fileExists(atPath: marker) }) else {
            throw DaemonError("the hold's command did not start")
        }
        return hold
    }

    /// Publishes template `version` (``document(version:keys:extra:)``), starts the daemon and waits
    /// for a fetch: the daemon then serves that template, the last good values a test attacks.
    func startServing(version: Int = 1) throws -> DaemonProcess {
        try publish(Sandbox.document(version: version))
        let daemon = try startDaemon()
        let fetch = try cli("fetch", "--wait")
        guard fetch.status == 0 else { throw DaemonError("the first fetch failed: \(fetch.stderr)\n\(daemon.log)") }
        return daemon
    }
}
