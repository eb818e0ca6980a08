import Foundation
import Glibc
import TestSupport
import Testing

/// The fake Firebase backend itself (Tests/Fixtures/firebase_server.py), driven by a raw HTTP/1.1
/// client written here, so the product tests that use it can trust what it answers and logs.
@Suite struct FirebaseServerTests {
    static let apiKey = "AIzaTestKey"
    static let project = "rc-test"
    static let appId = "1:123456789:linux:abcdef"
    static let fid = "cTestInstallation0001x"

    // MARK: - A raw HTTP/1.1 client: exact control over headers, chunk-by-chunk stream reads

    struct Response {
        let status: Int
        let headers: [String: String]  // names lower-cased
        let body: String
        var json: [String: Any]? { try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] }
        var errorMessage: String { ((json?["error"] as? [String: Any])?["message"] as? String) ?? "" }
    }

    enum Chunk: Equatable {
        case data(String)
        case end  // the terminating zero-length chunk
        case closed  // the socket closed before the terminating chunk
        case timeout
    }

    final class Connection {
        let fd: Int32
        private var buffer: [UInt8] = []

        init(port: Int) throws {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard rc == 0 else {
                close(fd)
                throw DaemonError("connect 127.0.0.1:\(port): errno \(errno)")
            }
        }

        deinit { close(fd) }

        func send(_ method: String, _ target: String, headers: [(String, String)], body: String?) throws {
            var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            for (name, value) in headers { head += "\(name): \(value)\r\n" }
            let payload = Array((body ?? "").utf8)
            if body != nil { head += "Content-Length: \(payload.count)\r\n" }
            let bytes = Array((head + "\r\n").utf8) + payload
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes {
                    Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
                }
                guard n > 0 else { throw DaemonError("send: errno \(errno)") }
                offset += n
            }
        }

        private enum Fill { case bytes, closed, timeout }

        private func fill(until deadline: Date) -> Fill {
            let remaining = max(deadline.timeIntervalSinceNow, 0.001)
            var value = timeval(
                tv_sec: Int(remaining), tv_usec: Int((remaining - remaining.rounded(.down)) * 1_000_000))
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                buffer.append(contentsOf: chunk[0..<n])
                return .bytes
            }
            return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? .timeout : .closed
        }

        /// The next CRLF-terminated line, or the reason there is none.
        private func line(until deadline: Date) -> Result<String, DaemonError> {
            while true {
                if let end = buffer.firstIndex(of: 0x0a) {
                    let line = String(decoding: buffer[..<end], as: UTF8.self)
                    buffer.removeSubrange(...end)
                    return .success(line.hasSuffix("\r") ? String(line.dropLast()) : line)
                }
                switch fill(until: deadline) {
                case .bytes: continue
                case .closed: return .failure(DaemonError("closed"))
                case .timeout: return .failure(DaemonError("timeout"))
                }
            }
        }

        private func bytes(_ count: Int, until deadline: Date) -> [UInt8]? {
            while buffer.count < count {
                guard case .bytes = fill(until: deadline) else { return nil }
            }
            defer { buffer.removeFirst(count) }
            return Array(buffer[..<count])
        }

        /// Status line and headers.
        func readHead(timeout: Double = 10) throws -> (status: Int, headers: [String: String]) {
            let deadline = Date().addingTimeInterval(timeout)
            let statusLine = try line(until: deadline).get()
            let parts = statusLine.split(separator: " ")
            guard parts.count >= 2, let status = Int(parts[1]) else {
                throw DaemonError("bad status line \(statusLine)")
            }
            var headers: [String: String] = [:]
            while true {
                let header = try line(until: deadline).get()
                if header.isEmpty { break }
                guard let colon = header.firstIndex(of: ":") else { throw DaemonError("bad header \(header)") }
                headers[header[..<colon].lowercased()] = header[header.index(after: colon)...].trimmingCharacters(
                    in: .whitespaces)
            }
            return (status, headers)
        }

        /// A whole response with a Content-Length body.
        func readResponse(timeout: Double = 10) throws -> Response {
            let (status, headers) = try readHead(timeout: timeout)
            let length = Int(headers["content-length"] ?? "0") ?? 0
            guard let body = bytes(length, until: Date().addingTimeInterval(timeout)) else {
                throw DaemonError("short body")
            }
            return Response(status: status, headers: headers, body: String(decoding: body, as: UTF8.self))
        }

        /// The next chunk of a chunked body.
        func readChunk(timeout: Double = 10) -> Chunk {
            let deadline = Date().addingTimeInterval(timeout)
            let sizeLine: String
            switch line(until: deadline) {
            case .success(let text): sizeLine = text
            case .failure(let error): return error.description == "timeout" ? .timeout : .closed
            }
            guard let size = Int(sizeLine.split(separator: ";").first ?? "", radix: 16) else { return .closed }
            if size == 0 {
                _ = line(until: deadline)
                return .end
            }
            guard let data = bytes(size + 2, until: deadline) else { return .closed }
            return .data(String(decoding: data.dropLast(2), as: UTF8.self))
        }
    }

    // MARK: - Requests as the client sends them

    static func json(_ object: Any) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    static let jsonHeaders = [("Content-Type", "application/json"), ("Accept", "application/json")]

    func call(_ server: FirebaseServer, _ target: String, headers: [(String, String)], body: Any?) throws -> Response {
        let connection = try Connection(port: server.port)
        try connection.send("POST", target, headers: headers, body: body.map { $0 as? String ?? Self.json($0) })
        return try connection.readResponse()
    }

    func create(
        _ server: FirebaseServer, fid: String = fid, headers: [(String, String)]? = nil, body: [String: Any]? = nil
    ) throws -> Response {
        try call(
            server, "/v1/projects/\(Self.project)/installations",
            headers: headers ?? Self.jsonHeaders + [("x-goog-api-key", Self.apiKey)],
            body: body ?? ["fid": fid, "authVersion": "FIS_v2", "appId": Self.appId, "sdkVersion": "rcagent:0.1.0"])
    }

    func generateToken(_ server: FirebaseServer, fid: String = fid, refreshToken: String) throws -> Response {
        try call(
            server, "/v1/projects/\(Self.project)/installations/\(fid)/authTokens:generate",
            headers: Self.jsonHeaders + [("x-goog-api-key", Self.apiKey), ("Authorization", "FIS_v2 \(refreshToken)")],
            body: ["installation": ["sdkVersion": "rcagent:0.1.0", "appId": Self.appId]])
    }

    static func fetchBody(token: String, fid: String = fid) -> [String: Any] {
        [
            "appInstanceId": fid, "appInstanceIdToken": token, "appId": appId, "appVersion": "0.1.0", "appBuild": "1",
            "sdkVersion": "rcagent:0.1.0", "languageCode": "en-US", "timeZone": "Europe/Paris",
            "platformVersion": "6.8",
            "packageName": "rcagent",
        ]
    }

    static func fetchHeaders(token: String, etag: String? = nil) -> [(String, String)] {
        jsonHeaders + [
            ("X-Goog-Api-Key", apiKey), ("X-Goog-Firebase-Installations-Auth", token),
            ("X-Firebase-RC-Fetch-Type", "BASE/1"),
        ] + (etag.map { [("If-None-Match", $0)] } ?? [])
    }

    func fetch(_ server: FirebaseServer, headers: [(String, String)], body: Any) throws -> Response {
        try call(
            server, "/v1/projects/\(Self.project)/namespaces/firebase:fetch?key=\(Self.apiKey)", headers: headers,
            body: body)
    }

    static let realtimeTarget = "/v1/projects/\(project)/namespaces/firebase:streamFetchInvalidations?key=\(apiKey)"

    static func realtimeHeaders(token: String) -> [(String, String)] {
        jsonHeaders + [
            ("X-Goog-Api-Key", apiKey), ("X-Goog-Firebase-Installations-Auth", token),
            ("X-Accept-Response-Streaming", "true"), ("If-None-Match", "*"),
        ]
    }

    static func realtimeBody(lastKnown: String) -> String {
        json([
            "project": project, "namespace": "firebase", "lastKnownVersionNumber": lastKnown, "appId": appId,
            "sdkVersion": "rcagent:0.1.0", "appInstanceId": fid,
        ])
    }

    /// An installation created on `server`: its refresh token and first auth token.
    func install(_ server: FirebaseServer) throws -> (refreshToken: String, authToken: String) {
        let created = try #require(try create(server).json)
        let refresh = try #require(created["refreshToken"] as? String)
        let token = try #require((created["authToken"] as? [String: Any])?["token"] as? String)
        return (refresh, token)
    }

    func makeServer() throws -> (Sandbox, FirebaseServer) {
        let sandbox = try Sandbox()
        let server = try FirebaseServer(in: sandbox)
        try server.setMode(["apiKey": Self.apiKey, "project": Self.project, "appId": Self.appId])
        return (sandbox, server)
    }

    // MARK: - Tests

    @Test func installationThenTokenThenFetchThenNoChange() throws {
        let (_, server) = try makeServer()
        try server.publish(version: 3, entries: ["greeting": "hi", "count": "7"])
        #expect(server.mode["apiKey"] as? String == Self.apiKey, "publish keeps the other mode keys")

        let created = try create(server)
        #expect(created.status == 200, "\(created.body)")
        let installation = try #require(created.json)
        #expect(installation["fid"] as? String == Self.fid)
        #expect(installation["name"] as? String == "projects/\(Self.project)/installations/\(Self.fid)")
        #expect((installation["authToken"] as? [String: Any])?["expiresIn"] as? String == "604800s")
        let refresh = try #require(installation["refreshToken"] as? String)

        let generated = try generateToken(server, refreshToken: refresh)
        #expect(generated.status == 200, "\(generated.body)")
        let token = try #require(generated.json?["token"] as? String)
        #expect(generated.json?["expiresIn"] as? String == "604800s")

        let first = try fetch(server, headers: Self.fetchHeaders(token: token), body: Self.fetchBody(token: token))
        #expect(first.status == 200, "\(first.body)")
        #expect(first.headers["etag"] == "\"etag-3\"")
        #expect(first.json?["state"] as? String == "UPDATE")
        #expect(first.json?["templateVersion"] as? String == "3")
        #expect(first.json?["entries"] as? [String: String] == ["greeting": "hi", "count": "7"])

        let same = try fetch(
            server, headers: Self.fetchHeaders(token: token, etag: "\"etag-3\""), body: Self.fetchBody(token: token))
        #expect(same.status == 200)
        #expect(same.json as? [String: String] == ["state": "NO_CHANGE"])

        try server.updateMode(["fetchAnswer304": true])
        let notModified = try fetch(
            server, headers: Self.fetchHeaders(token: token, etag: "\"etag-3\""), body: Self.fetchBody(token: token))
        #expect(notModified.status == 304)
        #expect(notModified.body.isEmpty)

        try server.publish(version: 4, entries: ["greeting": "hello"])
        var withSignals = Self.fetchBody(token: token)
        withSignals["customSignals"] = ["tier": "gold"]
        let newer = try fetch(server, headers: Self.fetchHeaders(token: token, etag: "\"etag-3\""), body: withSignals)
        #expect(newer.status == 200)
        #expect(newer.headers["etag"] == "\"etag-4\"")
        #expect(newer.json?["templateVersion"] as? String == "4")

        try server.updateMode(["fetchState": "EMPTY_CONFIG"])
        let empty = try fetch(server, headers: Self.fetchHeaders(token: token), body: Self.fetchBody(token: token))
        #expect(empty.json as? [String: String] == ["state": "EMPTY_CONFIG", "templateVersion": "4"])
        try server.updateMode(["fetchState": "NO_TEMPLATE"])
        let none = try fetch(server, headers: Self.fetchHeaders(token: token), body: Self.fetchBody(token: token))
        #expect(none.json as? [String: String] == ["state": "NO_TEMPLATE"])

        // The log holds everything the client sent, and what was answered.
        let log = server.requests
        #expect(
            log.map { $0["api"] as? String } == [
                "create", "token", "fetch", "fetch", "fetch", "fetch", "fetch", "fetch",
            ])
        #expect(log.map { $0["status"] as? Int } == [200, 200, 200, 200, 304, 200, 200, 200])
        #expect(log.allSatisfy { $0["problem"] is NSNull }, "\(log)")
        let fetches = server.requests(api: "fetch")
        #expect((fetches[0]["headers"] as? [String: String])?["x-goog-firebase-installations-auth"] == token)
        #expect((fetches[0]["headers"] as? [String: String])?["x-firebase-rc-fetch-type"] == "BASE/1")
        #expect((fetches[0]["query"] as? [String: String])?["key"] == Self.apiKey)
        #expect((fetches[0]["body"] as? [String: Any])?["appInstanceId"] as? String == Self.fid)
        #expect((fetches[1]["headers"] as? [String: String])?["if-none-match"] == "\"etag-3\"")
        #expect(((fetches[3]["body"] as? [String: Any])?["customSignals"] as? [String: String]) == ["tier": "gold"])
    }

    @Test func wrongRequestsAreRejectedNamingTheProblem() throws {
        let (_, server) = try makeServer()
        try server.publish(version: 1, entries: ["a": "1"])
        let (refresh, token) = try install(server)

        // A missing header: 400, INVALID_ARGUMENT, named in the answer and in the log.
        let noKey = try fetch(
            server, headers: Self.fetchHeaders(token: token).filter { $0.0 != "X-Goog-Api-Key" },
            body: Self.fetchBody(token: token))
        #expect(noKey.status == 400)
        #expect(noKey.errorMessage == "missing header X-Goog-Api-Key")
        #expect((noKey.json?["error"] as? [String: Any])?["status"] as? String == "INVALID_ARGUMENT")
        #expect((noKey.json?["error"] as? [String: Any])?["code"] as? Int == 400)
        #expect(server.requests.last?["problem"] as? String == "missing header X-Goog-Api-Key")
        #expect(server.requests.last?["status"] as? Int == 400)

        let noType = try fetch(
            server, headers: Self.fetchHeaders(token: token).filter { $0.0 != "X-Firebase-RC-Fetch-Type" },
            body: Self.fetchBody(token: token))
        #expect(noType.status == 400 && noType.errorMessage.contains("X-Firebase-RC-Fetch-Type"))

        var noLanguage = Self.fetchBody(token: token)
        noLanguage["languageCode"] = nil
        let missingField = try fetch(server, headers: Self.fetchHeaders(token: token), body: noLanguage)
        #expect(missingField.status == 400 && missingField.errorMessage == "missing field languageCode")

        var numeric = Self.fetchBody(token: token)
        numeric["platformVersion"] = 6
        let notString = try fetch(server, headers: Self.fetchHeaders(token: token), body: numeric)
        #expect(notString.status == 400 && notString.errorMessage.contains("platformVersion must be a string"))

        var snake = Self.fetchBody(token: token)
        snake["app_version"] = "1"
        let unknownField = try fetch(server, headers: Self.fetchHeaders(token: token), body: snake)
        #expect(unknownField.status == 400 && unknownField.errorMessage.contains("Unknown name \"app_version\""))

        var otherInstallation = Self.fetchBody(token: token)
        otherInstallation["appInstanceId"] = "dOtherInstallation0001"
        let wrongFid = try fetch(server, headers: Self.fetchHeaders(token: token), body: otherInstallation)
        #expect(wrongFid.status == 400 && wrongFid.errorMessage.contains("appInstanceId"))

        let wrongKey = try fetch(
            server, headers: Self.fetchHeaders(token: token).map { $0.0 == "X-Goog-Api-Key" ? ($0.0, "other") : $0 },
            body: Self.fetchBody(token: token))
        #expect(wrongKey.status == 400)

        // Credentials: an auth token this server never issued is 401; so is a foreign refresh token.
        let forged = try fetch(
            server, headers: Self.fetchHeaders(token: "forged"), body: Self.fetchBody(token: "forged"))
        #expect(forged.status == 401 && forged.errorMessage.contains("unknown installation auth token"))
        let badRefresh = try generateToken(server, refreshToken: "nope")
        #expect(badRefresh.status == 401)
        let unknownFid = try generateToken(server, fid: "eUnknownInstallation01", refreshToken: refresh)
        #expect(unknownFid.status == 404)

        // The installation request: FID format, authVersion, api key header.
        let badFid = try create(server, fid: "aTooShort")
        #expect(badFid.status == 400 && badFid.errorMessage.contains("fid"))
        let noApiKey = try create(server, headers: Self.jsonHeaders)
        #expect(noApiKey.status == 400 && noApiKey.errorMessage == "missing header x-goog-api-key")
        let notJSON = try create(
            server,
            headers: [("Content-Type", "text/plain"), ("Accept", "application/json"), ("x-goog-api-key", Self.apiKey)])
        #expect(notJSON.status == 400 && notJSON.errorMessage.contains("Content-Type"))

        // Forced statuses: the mode's answer, with no problem logged against the client.
        try server.updateMode(["fetchStatus": 429, "retryAfter": "120"])
        let throttled = try fetch(server, headers: Self.fetchHeaders(token: token), body: Self.fetchBody(token: token))
        #expect(throttled.status == 429)
        #expect(throttled.headers["retry-after"] == "120")
        #expect((throttled.json?["error"] as? [String: Any])?["status"] as? String == "RESOURCE_EXHAUSTED")
        #expect(server.requests.last?["problem"] is NSNull)
        try server.updateMode(["fetchStatus": nil, "retryAfter": nil, "tokenStatus": 404, "installationsStatus": 500])
        #expect(try generateToken(server, refreshToken: refresh).status == 404)
        #expect(try create(server).status == 500)
        try server.updateMode(["tokenStatus": nil, "installationsStatus": nil, "installationExpiresIn": 1])

        // A short-lived token expires.
        let shortLived = try #require(try generateToken(server, refreshToken: refresh).json)
        #expect(shortLived["expiresIn"] as? String == "1s")
        let shortToken = try #require(shortLived["token"] as? String)
        // Asked until the second has passed: the server's clock decides, not a sleep of ours.
        var expired: Response?
        #expect(
            try eventually(10) {
                expired = try fetch(
                    server, headers: Self.fetchHeaders(token: shortToken), body: Self.fetchBody(token: shortToken))
                return expired?.status != 200
            })
        #expect(
            expired?.status == 401 && expired?.errorMessage.contains("expired") == true,
            "\(String(describing: expired))")

        let nowhere = try call(server, "/v1/nowhere", headers: Self.jsonHeaders, body: "{}")
        #expect(nowhere.status == 404)
        #expect(server.requests.last?["api"] as? String == "unknown")
    }

    @Test func realtimeStreamSendsTheVersionThenPushesThenDrops() throws {
        let (_, server) = try makeServer()
        try server.publish(version: 5, entries: ["a": "5"])
        let (_, token) = try install(server)

        // Behind the server: the first chunk announces the current version.
        let behind = try Connection(port: server.port)
        try behind.send(
            "POST", Self.realtimeTarget, headers: Self.realtimeHeaders(token: token),
            body: Self.realtimeBody(lastKnown: "2"))
        let head = try behind.readHead()
        #expect(head.status == 200)
        #expect(head.headers["transfer-encoding"] == "chunked")
        #expect(behind.readChunk() == .data(#"{"latestTemplateVersionNumber": "5"}"# + "\n"))

        // Up to date: nothing until something is pushed.
        let current = try Connection(port: server.port)
        try current.send(
            "POST", Self.realtimeTarget, headers: Self.realtimeHeaders(token: token),
            body: Self.realtimeBody(lastKnown: "5"))
        #expect(try current.readHead().status == 200)
        #expect(current.readChunk(timeout: 0.3) == .timeout)
        #expect(server.openStreams == 2)

        try server.push(["latestTemplateVersionNumber": "6"])
        try server.push(["featureDisabled": true])
        for stream in [behind, current] {
            #expect(stream.readChunk() == .data(#"{"latestTemplateVersionNumber":"6"}"# + "\n"))
            #expect(stream.readChunk() == .data(#"{"featureDisabled":true}"# + "\n"))
        }

        // _drop: every open stream's socket closes, without the terminating chunk.
        try server.dropStreams()
        #expect(behind.readChunk() == .closed)
        #expect(current.readChunk() == .closed)
        #expect(server.wait { server.streamEnds.filter { $0["reason"] as? String == "dropped" }.count == 2 })
        #expect(server.openStreams == 0)

        // A stream opened after the drop does not see it; _close ends the body cleanly.
        let later = try Connection(port: server.port)
        try later.send(
            "POST", Self.realtimeTarget, headers: Self.realtimeHeaders(token: token),
            body: Self.realtimeBody(lastKnown: "6"))
        #expect(try later.readHead().status == 200)
        try server.pushLine("not json")
        #expect(later.readChunk() == .data("not json\n"))
        try server.closeStreams()
        #expect(later.readChunk() == .end)

        // The log: the stream requests as the client sent them.
        let streams = server.requests(api: "realtime")
        #expect(streams.count == 3)
        #expect((streams[0]["headers"] as? [String: String])?["x-accept-response-streaming"] == "true")
        #expect((streams[0]["body"] as? [String: String])?["lastKnownVersionNumber"] == "2")

        // Missing header and forced status.
        let bare = try Connection(port: server.port)
        try bare.send(
            "POST", Self.realtimeTarget,
            headers: Self.realtimeHeaders(token: token).filter { $0.0 != "X-Accept-Response-Streaming" },
            body: Self.realtimeBody(lastKnown: "6"))
        let rejected = try bare.readResponse()
        #expect(rejected.status == 400 && rejected.errorMessage == "missing header X-Accept-Response-Streaming")

        try server.updateMode(["realtimeStatus": 403])
        let forbidden = try Connection(port: server.port)
        try forbidden.send(
            "POST", Self.realtimeTarget, headers: Self.realtimeHeaders(token: token),
            body: Self.realtimeBody(lastKnown: "6"))
        let denied = try forbidden.readResponse()
        #expect(denied.status == 403)
        #expect((denied.json?["error"] as? [String: Any])?["status"] as? String == "PERMISSION_DENIED")

        // A client that hangs up ends its stream on the server.
        try server.updateMode(["realtimeStatus": nil])
        var leaving: Connection? = try Connection(port: server.port)
        try leaving?.send(
            "POST", Self.realtimeTarget, headers: Self.realtimeHeaders(token: token),
            body: Self.realtimeBody(lastKnown: "6"))
        #expect(try leaving?.readHead().status == 200)
        leaving = nil
        #expect(server.wait { server.streamEnds.contains { $0["reason"] as? String == "client closed" } })
    }
}
