import Foundation
import Glibc
import Testing

/// Issue 25 item 7: header values. An ETag with a bare CR was stored and sent back verbatim in
/// `If-None-Match`, and a CDN's ETag reached the configured origin after a redirect. Real config
/// servers (Tests/Fixtures/config_server.py) send the hostile headers and log what they receive.
@Suite struct SecurityHeaderTests {
    @Test func anETagWithABareCRIsNeitherStoredNorSentBack() throws {
        let sandbox = try Sandbox()
        let server = try ConfigServer(in: sandbox)
        try sandbox.writeConfig(extra: "[Source]\nType=http\nURL=\(server.url)\n[Agent]\nFetchTimeout=5s")
        try server.serve(Sandbox.document(version: 1), etag: "\"v1\rX-Injected: yes\"")
        let daemon = try sandbox.startDaemon()
        defer { daemon.stop() }
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0, "\(daemon.log)")
        #expect(try sandbox.cli("get", "key_0").stdout == "v1\n")
        let again = try sandbox.cli("fetch", "--force", "--wait")
        #expect(again.status == 0, "\(again.stderr)")
        let second = try #require(server.requests.last)
        #expect(second["if-none-match"] == nil, "\(second)")
        #expect(!second.keys.contains("x-injected"), "\(second)")
        #expect(!second.values.contains { $0.contains("\r") }, "\(second)")

        // A valid ETag afterwards is kept and sent back as usual.
        try server.serve(Sandbox.document(version: 2), etag: "\"v2\"")
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        #expect(try sandbox.cli("fetch", "--force", "--wait").stdout == "no change\n")
        #expect(server.requests.last?["if-none-match"] == "\"v2\"")
    }

    /// The validator goes back to the origin that sent it only: after a redirect to another origin
    /// (a CDN), the configured server never receives the CDN's ETag, and the CDN gets its own.
    @Test func anETagGoesBackOnlyToTheOriginThatSentIt() throws {
        let sandbox = try Sandbox()
        let origin = try ConfigServer(in: sandbox)
        let cdn = try ConfigServer(in: sandbox)
        try sandbox.writeConfig(extra: "[Source]\nType=http\nURL=\(origin.url)\n[Agent]\nFetchTimeout=5s")
        try cdn.serve(Sandbox.document(version: 1), etag: "\"cdn-1\"")
        try origin.setMode(["kind": "redirect", "status": 302, "location": cdn.url])
        let daemon = try sandbox.startDaemon()
        defer { daemon.stop() }
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0, "\(daemon.log)")
        #expect(try sandbox.cli("get", "key_0").stdout == "v1\n")
        // The CDN answers 304 to its own ETag; the configured origin is asked without it.
        let again = try sandbox.cli("fetch", "--force", "--wait")
        #expect(again.stdout == "no change\n", "\(again.stderr)")
        #expect(cdn.requests.last?["if-none-match"] == "\"cdn-1\"", "\(cdn.requests)")
        #expect(origin.requests.allSatisfy { $0["if-none-match"] == nil }, "\(origin.requests)")

        // The origin serves itself again: it still never sees the CDN's ETag, then gets its own.
        try origin.serve(Sandbox.document(version: 2), etag: "\"origin-2\"")
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        #expect(try sandbox.cli("get", "key_0").stdout == "v2\n")
        #expect(origin.requests.allSatisfy { $0["if-none-match"] == nil }, "\(origin.requests)")
        #expect(try sandbox.cli("fetch", "--force", "--wait").stdout == "no change\n")
        #expect(origin.requests.last?["if-none-match"] == "\"origin-2\"")
        #expect(cdn.requests.allSatisfy { $0["if-none-match"] != "\"origin-2\"" }, "\(cdn.requests)")
    }

    /// A `Header=` line or an API key HTTP cannot carry is a config error with its file and line,
    /// not a request with a header of the file's choosing.
    @Test func aHeaderWithAControlByteIsAConfigError() throws {
        for (line, message) in [
            (
                "Header=X-Group: lobby\rX-Injected: yes",
                "Header= value cannot be sent: it holds a control byte (CR at byte"
            ),
            ("Header=X-Group: lobby\u{0}", "Header= value cannot be sent: it holds a control byte (NUL at byte"),
            ("Header=X Group: lobby", "Header= name 'X Group' is not an HTTP token"),
            ("Header=X-Group : lobby", "Header= name 'X-Group ' is not an HTTP token"),
            ("APIKey=key\rX-Injected: yes", "APIKey= cannot be sent: it holds a control byte (CR at byte 3)"),
        ] {
            let sandbox = try Sandbox(extraConfig: line)  // in the [Source] section
            let result = try sandbox.cli("fetch")
            #expect(result.status == 1, "\(line)")
            #expect(result.stderr.contains("\(sandbox.configPath):"), "\(result.stderr)")
            #expect(result.stderr.contains(message), "\(result.stderr)")
            // A read does not need the source: it warns with the same words and answers.
            let get = try sandbox.cli("get", "greeting")
            #expect(get.status == 0 && get.stdout == "hello\n", "\(line)")
            #expect(get.stderr.hasPrefix("Warning: \(sandbox.configPath):") && get.stderr.contains(message))
        }
    }
}
