import Foundation
import Testing

/// The HTTP client of `FirebaseAdminServerTests`: Tests/Fixtures/google_client.py, which sends exactly
/// the headers and body it is given and reports status, headers and the decompressed body, and signs
/// JWTs with the openssl command.
extension FirebaseAdminServerTests {
    static let client = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/google_client.py").path

    struct Response {
        let status: Int
        let headers: [String: String]  // names lower-cased
        let gzip: Bool  // the body came Content-Encoding: gzip
        let body: String
        var json: [String: Any]? { try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] }
        var error: [String: Any] { json?["error"] as? [String: Any] ?? [:] }
        var googleStatus: String? { error["status"] as? String }
        var message: String { error["message"] as? String ?? "" }
        /// The token endpoint's error code ({"error": "invalid_grant", ...}).
        var oauthError: String? { json?["error"] as? String }
        var oauthDescription: String { json?["error_description"] as? String ?? "" }
    }

    /// Tests/Fixtures/google_client.py in its serve mode: one process per test answering a JSON
    /// line per call, so dozens of calls cost no process start each. Its stdin closes at deinit,
    /// which ends it. Foundation's Process, as FixtureProcess uses: TestSupport's Subprocess hands
    /// over output only at the end, and this child needs no signal to stop.
    final class Client {
        private let process = Process()
        private let input = Pipe()
        private let output = Pipe()
        private var buffer = Data()

        init() throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            process.arguments = [FirebaseAdminServerTests.client, "serve"]
            process.standardInput = input
            process.standardOutput = output
            try process.run()
        }

        deinit {
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
        }

        func call(_ command: [String: Any]) throws -> [String: Any] {
            let line = try JSONSerialization.data(withJSONObject: command) + Data("\n".utf8)
            try input.fileHandleForWriting.write(contentsOf: line)
            var newline = buffer.firstIndex(of: 0x0a)
            while newline == nil {
                let more = output.fileHandleForReading.availableData
                guard !more.isEmpty else { throw DaemonError("google_client.py ended") }
                buffer += more
                newline = buffer.firstIndex(of: 0x0a)
            }
            guard let end = newline else { throw DaemonError("unreachable: no line") }
            let answer = buffer[buffer.startIndex..<end]
            buffer = Data(buffer[(end + 1)...])
            guard let object = try JSONSerialization.jsonObject(with: answer) as? [String: Any] else {
                throw DaemonError("google_client.py answered \(String(decoding: answer, as: UTF8.self))")
            }
            if let failure = object["failure"] as? String { throw DaemonError("google_client.py: \(failure)") }
            return object
        }
    }

    struct Admin {
        let server: FirebaseServer
        let account: TestServiceAccount
        let client: Client

        func call(_ method: String, _ path: String, headers: [String] = [], body: String? = nil) throws -> Response {
            var command: [String: Any] = [
                "op": "request", "method": method, "url": server.endpoint + path,
                "headers": headers.map { header -> [String] in
                    let parts = header.split(separator: ":", maxSplits: 1).map(String.init)
                    return [parts[0], parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : ""]
                },
            ]
            if let body { command["body"] = body }
            let object = try client.call(command)
            guard let status = object["status"] as? Int else { throw DaemonError("no status in \(object)") }
            return Response(
                status: status, headers: object["headers"] as? [String: String] ?? [:],
                gzip: object["gzip"] as? Bool ?? false, body: object["body"] as? String ?? "")
        }

        /// A JWT signed by `key` (the account's by default) with the claims Google documents,
        /// changed by `changes` (a nil value removes a claim).
        func jwt(
            key: String? = nil, changes: [String: Any?] = [:], header: [String: Any]? = nil,
            standardBase64: Bool = false
        ) throws -> String {
            let now = Int(Date().timeIntervalSince1970)
            var claims: [String: Any] = [
                "iss": account.clientEmail, "aud": account.tokenURI, "iat": now, "exp": now + 3600,
                "scope": "\(FirebaseServer.remoteConfigScope) \(FirebaseServer.messagingScope)",
            ]
            for (name, value) in changes { claims[name] = value }
            let head = header ?? ["alg": "RS256", "typ": "JWT", "kid": account.privateKeyId]
            let answer = try client.call([
                "op": "jwt", "key": key ?? account.privateKeyPath, "header": FirebaseServerTests.json(head),
                "claims": FirebaseServerTests.json(claims), "standardBase64": standardBase64,
            ])
            guard let jwt = answer["jwt"] as? String else { throw DaemonError("no JWT in \(answer)") }
            return jwt
        }

        static func formEncoded(_ text: String) -> String {
            var allowed = CharacterSet.alphanumerics
            allowed.insert(charactersIn: "-._~")
            return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
        }

        func exchange(_ assertion: String, contentType: String = "application/x-www-form-urlencoded") throws
            -> Response
        {
            let grant = Self.formEncoded("urn:ietf:params:oauth:grant-type:jwt-bearer")
            return try call(
                "POST", "/token", headers: ["Content-Type: \(contentType)"],
                body: "grant_type=\(grant)&assertion=\(Self.formEncoded(assertion))")
        }

        /// An access token for `scope` (both scopes by default).
        func token(scope: String? = nil) throws -> String {
            let answer = try exchange(try jwt(changes: scope.map { ["scope": $0] } ?? [:]))
            guard answer.status == 200, let token = answer.json?["access_token"] as? String else {
                throw DaemonError("no access token: \(answer.status) \(answer.body)")
            }
            return token
        }

        var remoteConfig: String { "/v1/projects/\(FirebaseAdminServerTests.project)/remoteConfig" }

        func get(_ token: String, gzip: Bool = true, query: String = "", namespace: String? = nil) throws -> Response {
            let path =
                namespace.map { "/v1/projects/\(FirebaseAdminServerTests.project)/namespaces/\($0)/remoteConfig" }
                ?? remoteConfig
            return try call(
                "GET", path + query,
                headers: ["Authorization: Bearer \(token)"] + (gzip ? ["Accept-Encoding: gzip"] : []))
        }

        func put(_ token: String, _ template: [String: Any], ifMatch: String?, query: String = "") throws -> Response {
            try call(
                "PUT", remoteConfig + query,
                headers: ["Authorization: Bearer \(token)", "Accept-Encoding: gzip", "Content-Type: application/json"]
                    + (ifMatch.map { ["If-Match: \($0)"] } ?? []),
                body: FirebaseServerTests.json(template))
        }

        func post(_ token: String, _ path: String, _ body: [String: Any]) throws -> Response {
            try call(
                "POST", path,
                headers: ["Authorization: Bearer \(token)", "Accept-Encoding: gzip", "Content-Type: application/json"],
                body: FirebaseServerTests.json(body))
        }

        /// updateOrigin of every kept version of the client template, oldest first.
        var adminVersionOrigins: [String] { server.adminVersions().compactMap { $0["updateOrigin"] as? String } }

        func send(_ token: String, _ message: [String: Any], validateOnly: Bool = false) throws -> Response {
            var body: [String: Any] = ["message": message]
            if validateOnly { body["validate_only"] = true }
            return try post(token, "/v1/projects/\(FirebaseAdminServerTests.project)/messages:send", body)
        }
    }
}
