import Foundation
import Glibc
import Testing

/// The `http` source against a real HTTP server process: ETags, faults of every
/// kind, throttling, backoff that survives restarts, TLS.
@Suite struct HTTPSourceTests {
    /// A sandbox whose daemon fetches from `server`, with a short FetchTimeout so a hung server costs 2 s.
    func sandbox(tls: (certificate: String, key: String)? = nil, extra: String = "") throws -> (Sandbox, ConfigServer) {
        let sandbox = try Sandbox()
        let server = try ConfigServer(in: sandbox, tls: tls)
        try sandbox.writeConfig(
            extra:
                "[Source]\nType=http\nURL=\(server.url)\nHeader=X-Device-Group: lobby\n[Agent]\nFetchTimeout=2s\n\(extra)"
        )
        return (sandbox, server)
    }

    func statusJSON(_ sandbox: Sandbox) throws -> [String: Any] {
        let status = try sandbox.cli("status", "--json")
        return try #require(JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
    }

    /// Seconds from now until an ISO 8601 time in status.
    func secondsUntil(_ iso: Any?) -> Double? {
        guard let text = iso as? String else { return nil }
        let formatter = ISO8601DateFormatter()
        return formatter.date(from: text).map { $0.timeIntervalSinceNow }
    }

    @Test func etagThenNotModified() throws {
        let (sandbox, server) = try sandbox()
        try server.serve(Sandbox.document(version: 1), etag: "\"v1\"")
        let daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        #expect(try sandbox.cli("get", "key_0").stdout == "v1\n")
        let again = try sandbox.cli("fetch", "--force", "--wait")
        #expect(again.stdout == "no change\n")
        let requests = server.requests
        #expect(requests.first?["if-none-match"] == nil)
        #expect(requests.last?["if-none-match"] == "\"v1\"")
        #expect(requests.allSatisfy { $0["x-device-group"] == "lobby" && $0["accept"] == "application/json" })

        try server.serve(Sandbox.document(version: 2), etag: "\"v2\"")
        #expect(try sandbox.cli("fetch", "--force", "--wait").stdout.contains("fetched and activated template 2"))
        #expect(try sandbox.cli("get", "key_0").stdout == "v2\n")
        daemon.stop()
    }

    struct Fault: Sendable, CustomTestStringConvertible {
        let name: String
        let mode: [String: String]
        let bytes: Int?
        let status: Int?
        let error: String
        var testDescription: String { name }

        var asMode: [String: Any] {
            var m: [String: Any] = mode
            if let bytes { m["bytes"] = bytes }
            if let status { m["status"] = status }
            return m
        }
    }

    static let faults: [Fault] = [
        Fault(
            name: "HTTP 500", mode: ["kind": "status", "body": "database on fire"], bytes: nil, status: 500,
            error: "HTTP 500: database on fire"),
        Fault(name: "HTTP 404", mode: ["kind": "status"], bytes: nil, status: 404, error: "HTTP 404"),
        Fault(name: "no answer", mode: ["kind": "hang"], bytes: nil, status: nil, error: "(timeout)"),
        Fault(name: "reset mid-body", mode: ["kind": "reset"], bytes: nil, status: nil, error: "(transport)"),
        Fault(
            name: "body shorter than its length", mode: ["kind": "truncated", "body": Sandbox.document(version: 9)],
            bytes: nil, status: nil, error: "(transport)"),
        Fault(
            name: "truncated JSON",
            mode: ["kind": "document", "body": String(Sandbox.document(version: 9).prefix(30))], bytes: nil,
            status: nil, error: "invalid JSON"),
        Fault(
            name: "not JSON", mode: ["kind": "document", "body": "<html>captive portal</html>"], bytes: nil,
            status: nil, error: "invalid JSON"),
        Fault(
            name: "wrong shape", mode: ["kind": "document", "body": #"{"config": {"a": "1"}}"#], bytes: nil,
            status: nil, error: "neither a fetch response"),
        Fault(name: "50 MiB chunked", mode: ["kind": "big"], bytes: 50 << 20, status: nil, error: "(too-large)"),
        Fault(
            name: "50 MiB declared", mode: ["kind": "big-declared"], bytes: 50 << 20, status: nil, error: "(too-large)"),
    ]

    @Test(arguments: faults)
    func faultKeepsTheLastGoodSnapshotAndBacksOff(_ fault: Fault) throws {
        let (sandbox, server) = try sandbox()
        try server.serve(Sandbox.document(version: 1), etag: "\"v1\"")
        let daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        try server.setMode(fault.asMode)
        let before = server.requests.count

        let failed = try sandbox.cli("notify", "--wait", #"{"data":{"CONFIG_STATE":"STALE"}}"#)
        #expect(failed.status == 1)
        #expect(failed.stderr.contains(fault.error), "\(failed.stderr)")
        #expect(server.requests.count == before + 1)

        #expect(try sandbox.cli("get", "key_0").stdout == "v1\n", "the last good snapshot stays active")
        let status = try statusJSON(sandbox)
        #expect((status["stale"] as? [String: Any])?["set"] as? Bool == true, "the stale flag stays set")
        let lastFetch = try #require(status["lastFetch"] as? [String: Any])
        #expect(lastFetch["status"] as? String == "failure")
        #expect((lastFetch["error"] as? String)?.contains(fault.error) == true)
        // First backoff step: 2 minutes ±50%.
        let wait = try #require(secondsUntil(status["nextFetchAt"]))
        #expect(wait > 55 && wait < 185, "next attempt in \(wait)s")

        // A burst of pings during the backoff costs no request.
        for _ in 0..<10 {
            let ping = try sandbox.cli("notify", "--wait", #"{"data":{"CONFIG_STATE":"STALE"}}"#)
            #expect(ping.stdout.contains("not fetched: backing off"), "\(ping.stdout)\(ping.stderr)")
        }
        #expect(server.requests.count == before + 1, "no request storm")
        daemon.stop()
    }

    @Test func backoffSurvivesARestart() throws {
        let (sandbox, server) = try sandbox()
        try server.serve(Sandbox.document(version: 1))
        var daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        try server.setMode(["kind": "status", "status": 500])
        #expect(try sandbox.cli("notify", "--wait", #"{"data":{"CONFIG_STATE":"STALE"}}"#).status == 1)
        let count = server.requests.count
        // A reboot loop: every start is stale, and none may fetch before the backoff ends.
        for _ in 0..<3 {
            #expect(daemon.stop() == 0)
            daemon = try sandbox.startDaemon()
            let ping = try sandbox.cli("notify", "--wait", #"{"data":{"CONFIG_STATE":"STALE"}}"#)
            #expect(ping.stdout.contains("backing off"), "\(ping.stdout)")
        }
        #expect(server.requests.count == count)
        #expect(try sandbox.cli("get", "key_0").stdout == "v1\n")
        daemon.stop()
    }

    @Test func retryAfterThrottlesEvenForcedFetches() throws {
        let (sandbox, server) = try sandbox()
        try server.serve(Sandbox.document(version: 1))
        let daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        try server.setMode(["kind": "status", "status": 503, "headers": ["Retry-After": "600"]])
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 1)
        let count = server.requests.count

        let status = try statusJSON(sandbox)
        let throttle = try #require(secondsUntil(status["throttledUntil"]))
        #expect(throttle > 590 && throttle <= 600)
        let refused = try sandbox.cli("fetch", "--force", "--wait")
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("the server throttles fetches until 20"), "\(refused.stderr)")
        #expect(server.requests.count == count, "a refused fetch sends nothing")

        try server.serve(Sandbox.document(version: 2))
        let override = try sandbox.cli("fetch", "--force", "--ignore-throttle", "--wait")
        #expect(override.status == 0, "\(override.stderr)")
        #expect(try sandbox.cli("get", "key_0").stdout == "v2\n")
        #expect(try statusJSON(sandbox)["throttledUntil"] is NSNull, "a success lifts the throttle")
        daemon.stop()
    }

    @Test func tooManyRequestsWithoutRetryAfterThrottlesForTheBackoff() throws {
        let (sandbox, server) = try sandbox()
        try server.serve(Sandbox.document(version: 1))
        let daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        try server.setMode(["kind": "status", "status": 429])
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 1)
        let throttle = try #require(secondsUntil(try statusJSON(sandbox)["throttledUntil"]))
        #expect(throttle > 55 && throttle < 185)
        #expect(try sandbox.cli("fetch", "--force", "--wait").stderr.contains("throttles fetches until"))
        daemon.stop()
    }

    @Test func tlsWithAPrivateCAAndARefusedCertificate() throws {
        let probe = try Sandbox()
        let pki = try TestPKI(in: probe.root)

        let (good, goodServer) = try sandbox(
            tls: (pki.serverCertificate, pki.serverKey), extra: "[Source]\nCAFile=\(pki.caCertificate)")
        try goodServer.serve(Sandbox.document(version: 1))
        var daemon = try good.startDaemon()
        let fetched = try good.cli("fetch", "--force", "--wait")
        #expect(fetched.status == 0, "\(fetched.stderr)")
        #expect(try good.cli("get", "key_0").stdout == "v1\n")
        daemon.stop()

        let (bad, badServer) = try sandbox(
            tls: (pki.rogueCertificate, pki.rogueKey), extra: "[Source]\nCAFile=\(pki.caCertificate)")
        try badServer.serve(Sandbox.document(version: 1))
        daemon = try bad.startDaemon()
        let refused = try bad.cli("fetch", "--force", "--wait")
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("(tls)"), "\(refused.stderr)")
        #expect(try bad.cli("get", "key_0").status == 1, "nothing from an unverified server is used")
        daemon.stop()
    }
}
