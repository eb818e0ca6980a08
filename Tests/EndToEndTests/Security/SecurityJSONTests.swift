import Foundation
import Glibc
import TestSupport
import Testing

/// Hostile JSON through every channel the daemon reads it from (issue items 2, 3 and 6): nesting that
/// overflowed the stack or cost seconds to decode, and NUL that the store cut short. Each test sends it
/// the way an attacker would and checks what must hold afterwards: the daemon runs and answers, the
/// last good values are served, the owner's commands work.
@Suite struct SecurityJSONTests {
    /// Nested shapes, each `depth` levels deep around a small value.
    static func nested(_ depth: Int, shape: Int = 0) -> String {
        let (open, close, inner) =
            [("[", "]", "0"), (#"{"a":"#, "}", "0"), (#"[{"b":"#, "}]", "1"), (#"{"c":["#, "]}", "true")][shape % 4]
        return String(repeating: open, count: depth) + inner + String(repeating: close, count: depth)
    }

    /// What the attacker sent and found, in nesting levels: the old limit, what overflowed, what cost seconds.
    static let depths = [101, 430, 500, 509, 512, 5_000]

    /// The most nesting that fits one request line: `[` repeated to the line limit.
    static let widest = String(repeating: "[", count: 64 * 1024 - 2)

    @Test func nestedSocketLinesGetAnErrorAndTheDaemonAnswers() throws {
        let sandbox = try Sandbox()
        let daemon = try sandbox.startServing()
        let client = try SocketClient(path: sandbox.socketPath)
        var lines = Self.depths.flatMap { depth in
            (0..<4).flatMap { shape in
                [
                    Self.nested(depth, shape: shape),
                    #"{"op":"message","message":{"data":{"CONFIG_STATE":"STALE"},"x":"#
                        + Self.nested(depth, shape: shape)
                        + "}}",
                ]
            }
        }
        lines.append(Self.widest)
        var slowest = 0.0
        for line in lines {
            let started = Date()
            #expect(client.write(line + "\n"))
            let response = try #require(client.readLine(timeout: 30), "no answer; log:\n\(daemon.log)")
            slowest = max(slowest, Date().timeIntervalSince(started))
            #expect(response.contains(#""ok":false"#) && response.contains("nesting deeper than"), "\(response)")
        }
        // A failure bound, not a benchmark: the old decoder took seconds per line, or crashed.
        #expect(slowest < 2, "slowest hostile line took \(slowest) s")
        // The same connection still serves an ordinary request.
        #expect(client.request(#"{"op":"ping"}"#)?["ok"] as? Bool == true)
        try expectDaemonKeptItsState(sandbox, daemon)
        daemon.stop()
    }

    @Test func aRetainedNestedMQTTMessageCannotCrashLoopTheDaemon() throws {
        let (sandbox, server, broker) = try MQTTTests().setUp()
        try server.serve(Sandbox.document(version: 1), etag: "\"v1\"")
        // Retained: every subscriber gets it on every (re)connect, as a fleet would. 472 levels: within the
        // old syntax check's 512, past what the old recursive decoder's thread stack held.
        let hostile = #"{"data":{"CONFIG_STATE":"STALE","x":"# + Self.nested(470) + "}}"
        try broker.publish(hostile, retain: true)
        for round in 1...3 {
            let daemon = try sandbox.startDaemon()
            #expect(
                eventually { daemon.log.contains("Ignoring an MQTT message") }, "round \(round):\n\(daemon.log)")
            #expect(daemon.process.isRunning, "round \(round):\n\(daemon.log)")
            #expect(try eventually { try sandbox.cli("get", "key_0").stdout == "v1\n" })
            #expect(daemon.stop() == 0, "round \(round): a clean stop\n\(daemon.log)")
        }
        // The channel still works for the real ping after the hostile one.
        let daemon = try sandbox.startDaemon()
        #expect(eventually { daemon.log.contains("Ignoring an MQTT message") })
        try server.serve(Sandbox.document(version: 2), etag: "\"v2\"")
        try broker.publish(MQTTTests.ping)
        #expect(try eventually { try sandbox.cli("get", "key_0").stdout == "v2\n" }, "\(daemon.log)")
        try expectDaemonKeptItsState(sandbox, daemon, value: "v2")
        daemon.stop()
    }

    @Test func aNestedRealtimeLineIsIgnoredAndTheStreamGoesOn() throws {
        let (sandbox, server) = try FirebaseSourceTests().sandbox(realtime: "yes")
        try server.publish(version: 1, entries: ["key_0": "v1"])
        let daemon = try sandbox.startDaemon()
        #expect(eventually { !server.requests(api: "realtime").isEmpty }, "\(daemon.log)")
        #expect(try eventually { try sandbox.cli("get", "key_0").stdout == "v1\n" }, "\(daemon.log)")
        for depth in Self.depths {
            try server.pushLine(#"{"latestTemplateVersionNumber":"# + Self.nested(depth, shape: 1) + "}")
        }
        // Lines are handled in order: the version announced after them arriving proves they were read.
        let watcher = try SocketClient(path: sandbox.socketPath)
        #expect(watcher.watch())
        try server.publish(version: 2, entries: ["key_0": "v2"])
        try server.push(["latestTemplateVersionNumber": "2"])
        let activated = watcher.event(timeout: 20) { $0["event"] as? String == "activated" }
        #expect(activated != nil, "\(daemon.log)")
        #expect(daemon.log.contains("Ignoring an unreadable realtime message"), "\(daemon.log)")
        try expectDaemonKeptItsState(sandbox, daemon, value: "v2")
        daemon.stop()
    }

    /// 20 values 509 levels deep (about 20 KB) took 40 s to fetch: now a quick, named refusal.
    static let deepDocument =
        "{\"state\":\"UPDATE\",\"templateVersion\":\"2\",\"entries\":{"
        + (0..<20).map { "\"k\($0)\":" + nested(509, shape: $0) }.joined(separator: ",") + "}}"

    @Test func aDeeplyNestedFileDocumentFailsTheFetchQuickly() throws {
        let took = try expectFileFetchRefuses(Self.deepDocument, saying: "nesting deeper than 100 levels at line 1")
        #expect(took < 5, "a failure bound: the old decoder took 40 s")
    }

    @Test func aDeeplyNestedHTTPDocumentFailsTheFetchQuickly() throws {
        try expectHTTPFetchRefuses(Self.deepDocument, saying: "nesting deeper than 100 levels")
    }

    @Test func aDeeplyNestedDefaultsFileIsANamedError() throws {
        let sandbox = try Sandbox(defaults: #"{"greeting": "hello", "deep": "# + Self.nested(5_000) + "}")
        let get = try sandbox.cli("get", "greeting")
        #expect(get.status == 1)
        #expect(get.stderr.contains(sandbox.defaultsPath) && get.stderr.contains("nesting deeper than 100 levels"))
        let daemon = try DaemonProcess(sandbox)
        daemon.process.waitUntilExit()
        #expect(daemon.process.terminationStatus == 1, "a bad defaults file stops the start, cleanly")
        #expect(daemon.log.contains("nesting deeper than 100 levels"), "\(daemon.log)")
    }

    /// "a\u0000b" was stored as "a"; beside a key "a" that made a UNIQUE failure the agent took for a
    /// full disk ("retrying every 5 s") while status said the fetch succeeded.
    @Test(arguments: [
        #"{"state":"UPDATE","templateVersion":"2","entries":{"a\u0000b":"1","a":"2"}}"#,
        #"{"state":"UPDATE","templateVersion":"2","entries":{"key_0":"v2\u0000; rm -rf /"}}"#,
        #"{"parameters":{"a\u0000":{"defaultValue":{"value":"x"}}},"version":{"versionNumber":"2"}}"#,
        // Two names, one text in two Unicode forms: a map keyed by Swift strings would merge them.
        #"{"state":"UPDATE","templateVersion":"2","entries":{"caf\u00e9":"1","cafe\u0301":"2"}}"#,
    ])
    func keysAndValuesTheStoreCannotKeepAreRefusedByName(_ document: String) throws {
        let sandbox = try Sandbox()
        let daemon = try sandbox.startServing()
        try sandbox.publish(document)
        let fetch = try sandbox.cli("fetch", "--force", "--wait")
        #expect(fetch.status == 1)
        #expect(
            fetch.stderr.contains("may not contain NUL (U+0000)")
                || fetch.stderr.contains("different Unicode normalization forms"), "\(fetch.stderr)")
        let status = try sandbox.cli("status", "--json")
        #expect(status.stdout.contains(#""status":"failure""#), "\(status.stdout)")
        #expect(!daemon.log.contains("retrying every"), "not a disk failure:\n\(daemon.log)")
        try expectDaemonKeptItsState(sandbox, daemon)
        daemon.stop()
    }
}
