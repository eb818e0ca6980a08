import Foundation
import Glibc
import Testing

/// Issue 14 item 11: what a redirect may make the agent send. The agent follows redirects itself:
/// never from https to http, and the request's own headers (`Header=` secrets) only to the
/// configured origin. Real TLS servers with a throwaway CA, real plain HTTP servers; each server
/// logs every request it receives, so "never sent" is read from the receiving side.
@Suite struct SecurityHTTPTests {
    static let secret = "Authorization: Bearer s3cret-token"
    static let apiKey = "X-Api-Key: k3y-0123456789"

    /// An https config server (test CA) that the daemon fetches from with two secret headers.
    func httpsSandbox() throws -> (Sandbox, ConfigServer, TestPKI) {
        let sandbox = try Sandbox()
        let pki = try TestPKI(in: sandbox.root)
        let server = try ConfigServer(in: sandbox, tls: (pki.serverCertificate, pki.serverKey))
        try sandbox.writeConfig(
            extra: """
                [Source]
                Type=http
                URL=\(server.url)
                CAFile=\(pki.caCertificate)
                Header=\(Self.secret)
                Header=\(Self.apiKey)
                [Agent]
                FetchTimeout=5s
                """)
        return (sandbox, server, pki)
    }

    func carriesSecrets(_ request: [String: String]) -> Bool {
        request["authorization"] != nil || request["x-api-key"] != nil
    }

    @Test func anHTTPSToHTTPRedirectIsRefusedBeforeAnythingIsSent() throws {
        let (sandbox, server, _) = try httpsSandbox()
        let plain = try ConfigServer(in: sandbox)
        try plain.serve(Sandbox.document(version: 9))
        try server.serve(Sandbox.document(version: 1))
        let daemon = try sandbox.startDaemon()
        let first = try sandbox.cli("fetch", "--force", "--wait")
        #expect(first.status == 0, "\(first.stderr)")
        #expect(server.requests.last.map(carriesSecrets) == true, "the configured origin gets the headers")

        for status in [301, 302, 303, 307, 308] {
            try server.setMode(["kind": "redirect", "status": status, "location": plain.url])
            let started = Date()
            let refused = try sandbox.cli("fetch", "--force", "--wait")
            #expect(refused.status == 1)
            #expect(
                refused.stderr.contains("refusing a redirect from https to http: \(server.url) to \(plain.url)"),
                "\(status): \(refused.stderr)")
            #expect(Date().timeIntervalSince(started) < 5, "refused at once, not timed out")
        }
        #expect(plain.requests.isEmpty, "the http server never received a request: \(plain.requests)")
        #expect(try sandbox.cli("get", "key_0").stdout == "v1\n", "the last good values are served")
        #expect(daemon.stop() == 0)
    }

    @Test func headersFollowSameOriginRedirectsOnly() throws {
        let (sandbox, server, pki) = try httpsSandbox()

        // Same origin (scheme, host and port): the headers go along.
        let moved = "https://127.0.0.1:\(server.port)/moved.json"
        try server.setMode([
            "kind": "redirect", "status": 302, "location": moved,
            "then": ["kind": "document", "body": Sandbox.document(version: 1)],
        ])
        let daemon = try sandbox.startDaemon()
        let same = try sandbox.cli("fetch", "--force", "--wait")
        #expect(same.status == 0, "\(same.stderr)")
        #expect(try sandbox.cli("get", "key_0").stdout == "v1\n")
        let hops = server.requests
        #expect(hops.count >= 2 && hops.count % 2 == 0, "each fetch is a redirect and its target: \(hops)")
        #expect(hops.allSatisfy(carriesSecrets), "\(hops)")

        // Another origin, https to https: followed, without the headers.
        let other = try ConfigServer(in: sandbox, tls: (pki.serverCertificate, pki.serverKey))
        try other.serve(Sandbox.document(version: 2))
        try server.setMode(["kind": "redirect", "status": 307, "location": other.url])
        let cross = try sandbox.cli("fetch", "--force", "--wait")
        #expect(cross.status == 0, "\(cross.stderr)")
        #expect(try sandbox.cli("get", "key_0").stdout == "v2\n")
        #expect(other.requests.count == 1)
        #expect(!other.requests.contains(where: carriesSecrets), "\(other.requests)")
        #expect(server.requests.allSatisfy(carriesSecrets))

        // Back to the configured origin from elsewhere: the headers are the configured origin's again.
        try other.setMode([
            "kind": "redirect", "status": 302, "location": moved, "then": ["kind": "status", "status": 404],
        ])
        try server.setMode([
            "kind": "redirect", "status": 302, "location": other.url,
            "then": ["kind": "document", "body": Sandbox.document(version: 3)],
        ])
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        #expect(try sandbox.cli("get", "key_0").stdout == "v3\n")
        #expect(!other.requests.contains(where: carriesSecrets))
        #expect(server.requests.last.map(carriesSecrets) == true)
        #expect(daemon.stop() == 0)
    }

    @Test func aRedirectLoopEndsAfterFiveHops() throws {
        let (sandbox, server, _) = try httpsSandbox()
        try server.serve(Sandbox.document(version: 1))
        let daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        try server.setMode(["kind": "redirect", "status": 302, "location": server.url])
        let before = server.requests.count
        let looped = try sandbox.cli("fetch", "--force", "--wait")
        #expect(looped.status == 1)
        #expect(looped.stderr.contains("too many redirects (more than 5)"), "\(looped.stderr)")
        #expect(server.requests.count - before == 6, "the request and five redirects")
        #expect(try sandbox.cli("get", "key_0").stdout == "v1\n")
        #expect(daemon.stop() == 0)
    }
}
