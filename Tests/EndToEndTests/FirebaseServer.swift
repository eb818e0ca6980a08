import Foundation
import Glibc

/// The fake Firebase backend (Tests/Fixtures/firebase_server.py) as a real process on loopback:
/// Firebase Installations, the Remote Config fetch call and the realtime stream on one port.
/// Tests script it through its mode file (`setMode`, `publish`) and realtime script (`push`,
/// `dropStreams`), and read everything the client sent from its request log (`requests`).
/// The script's docstring is the reference for every mode key and log field.
final class FirebaseServer {
    let directory: URL
    /// Held so the server's directory (inside the sandbox) outlives the server.
    let sandbox: Sandbox
    private let server: FixtureProcess
    var port: Int { server.port }

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/firebase_server.py").path

    var modePath: String { directory.appendingPathComponent("mode.json").path }
    var realtimePath: String { directory.appendingPathComponent("realtime.jsonl").path }
    var logPath: String { directory.appendingPathComponent("requests.log").path }
    var streamLogPath: String { directory.appendingPathComponent("streams.log").path }

    init(in sandbox: Sandbox) throws {
        let directory = sandbox.root.appendingPathComponent("firebase-\(UUID().uuidString.prefix(6))")
        self.directory = directory
        self.sandbox = sandbox
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for file in ["requests.log", "realtime.jsonl", "streams.log"] {
            try "".write(to: directory.appendingPathComponent(file), atomically: true, encoding: .utf8)
        }
        server = try FixtureProcess(
            ["/usr/bin/python3", Self.script, directory.path], name: "the fake Firebase server")
    }

    /// What `Endpoint=` must be set to: scheme, host and port of all three Google APIs.
    var endpoint: String { "http://127.0.0.1:\(port)" }

    /// The mode as it is now (empty before the first `setMode`/`publish`).
    var mode: [String: Any] {
        guard let data = FileManager.default.contents(atPath: modePath) else { return [:] }
        return (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
    }

    /// Replaces the whole mode file, atomically (the server re-reads it on every request).
    func setMode(_ mode: [String: Any]) throws {
        let data = try JSONSerialization.data(withJSONObject: mode, options: [.sortedKeys])
        let temporary = directory.appendingPathComponent("mode.tmp")
        try data.write(to: temporary)
        guard rename(temporary.path, modePath) == 0 else { throw DaemonError("rename mode file") }
    }

    /// Changes some mode keys and keeps the others; a nil value removes the key.
    func updateMode(_ changes: [String: Any?]) throws {
        var current = mode
        for (key, value) in changes { current[key] = value }
        try setMode(current)
    }

    /// Publishes a template: fetches answer it (ETag "etag-<version>"), new streams compare against it.
    /// Other mode keys stay. Open streams are not told: `push` a message for that.
    func publish(version: Int, entries: [String: String]) throws {
        try updateMode(["template": ["version": version, "entries": entries] as [String: Any]])
    }

    /// Sends `message` as one chunk on every realtime stream open now.
    func push(_ message: [String: Any]) throws {
        let data = try JSONSerialization.data(withJSONObject: message, options: [.sortedKeys])
        try pushLine(String(decoding: data, as: UTF8.self))
    }

    /// Sends `line` as it is (it may be invalid JSON) as one chunk on every open stream.
    func pushLine(_ line: String) throws {
        precondition(!line.contains("\n"), "one message per line")
        guard let handle = FileHandle(forWritingAtPath: realtimePath) else { throw DaemonError("open \(realtimePath)") }
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: Data((line + "\n").utf8))  // one write: a reader never sees half a line
    }

    /// Closes every open stream abruptly: the socket closes without the terminating chunk.
    func dropStreams() throws { try push(["_drop": true]) }

    /// Ends every open stream cleanly (terminating chunk, then close).
    func closeStreams() throws { try push(["_close": true]) }

    /// Every request so far, oldest first: api, method, path, query, headers (lower-cased), body,
    /// status, problem, time, and stream (an id, for accepted realtime streams).
    var requests: [[String: Any]] { Self.jsonLines(logPath) }

    /// The requests to one API: "create", "token", "fetch", "realtime" or "unknown".
    func requests(api: String) -> [[String: Any]] { requests.filter { $0["api"] as? String == api } }

    /// Streams that ended: stream (id), event ("end"), reason ("client closed", "dropped", "closed"), time.
    var streamEnds: [[String: Any]] { Self.jsonLines(streamLogPath) }

    /// Realtime streams the server is holding open now.
    var openStreams: Int {
        let ended = Set(streamEnds.compactMap { $0["stream"] as? Int })
        return requests(api: "realtime").compactMap { $0["stream"] as? Int }.filter { !ended.contains($0) }.count
    }

    /// Polls `condition` every 20 ms until it holds or `timeout` seconds pass; returns whether it held.
    @discardableResult
    func wait(timeout: Double = 10, until condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            usleep(20_000)
        }
        return condition()
    }

    private static func jsonLines(_ path: String) -> [[String: Any]] {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        }
    }
}
