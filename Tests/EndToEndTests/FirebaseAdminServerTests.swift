import Foundation
import Testing

/// The fake Google admin backend itself (the admin side of Tests/Fixtures/firebase_server.py),
/// driven by a plain HTTP client (Tests/Fixtures/google_client.py: sends exactly the headers and
/// body it is given, reports status, headers and the decompressed body) and JWTs signed by the
/// openssl command, so the rcadmin tests that run against it can trust what it accepts and refuses.
@Suite struct FirebaseAdminServerTests {
    static let project = "rc-test"

    func makeAdmin() throws -> (Sandbox, Admin) {
        let sandbox = try Sandbox()
        let server = try FirebaseServer(in: sandbox)
        let account = try server.makeServiceAccount(project: Self.project)
        return (sandbox, Admin(server: server, account: account, client: try Client()))
    }

    static func template(_ greeting: String, description: String? = nil) -> [String: Any] {
        var template: [String: Any] = [
            "conditions": [["name": "ios", "expression": "device.os == 'ios'", "tagColor": "BLUE"]],
            "parameters": [
                "greeting": [
                    "defaultValue": ["value": greeting], "conditionalValues": ["ios": ["value": "hi ios"]],
                    "valueType": "STRING",
                ],
                "local_only": ["defaultValue": ["useInAppDefault": true]],
            ],
            "parameterGroups": [
                "updates": [
                    "description": "app updates",
                    "parameters": ["count": ["defaultValue": ["value": "3"], "valueType": "NUMBER"]],
                ]
            ],
        ]
        if let description { template["version"] = ["description": description] }
        return template
    }

    // MARK: - Tests

    @Test func tokenEndpointAcceptsOnlyAProperlySignedJWT() throws {
        let (_, admin) = try makeAdmin()

        let good = try admin.exchange(try admin.jwt())
        #expect(good.status == 200, "\(good.body)")
        #expect((good.json?["access_token"] as? String)?.hasPrefix("ya29.") == true)
        #expect(good.json?["expires_in"] as? Int == 3600)
        #expect(good.json?["token_type"] as? String == "Bearer")
        let logged = try #require(admin.server.requests(api: "oauth-token").last)
        #expect((logged["form"] as? [String: String])?["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer")
        #expect(logged["problem"] is NSNull)

        // What the seed's scripts sent: standard base64 with padding, a JSON body.
        let standard = try admin.exchange(try admin.jwt(standardBase64: true))
        #expect(standard.status == 400 && standard.oauthError == "invalid_grant", "\(standard.body)")
        #expect(standard.oauthDescription.contains("base64url"))
        let json = try admin.call(
            "POST", "/token", headers: ["Content-Type: application/json"],
            body: FirebaseServerTests.json([
                "grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer", "assertion": try admin.jwt(),
            ]))
        #expect(json.status == 400 && json.oauthError == "invalid_request", "\(json.body)")

        let wrongAudience = try admin.exchange(try admin.jwt(changes: ["aud": "http://127.0.0.1:1/token"]))
        #expect(wrongAudience.status == 400 && wrongAudience.oauthError == "invalid_grant")
        #expect(wrongAudience.oauthDescription.contains("aud"))

        let now = Int(Date().timeIntervalSince1970)
        let expired = try admin.exchange(try admin.jwt(changes: ["iat": now - 7200, "exp": now - 3600]))
        #expect(expired.status == 400 && expired.oauthError == "invalid_grant")
        #expect(expired.oauthDescription.contains("expired"))
        let tooLong = try admin.exchange(try admin.jwt(changes: ["exp": now + 7200]))
        #expect(tooLong.status == 400 && tooLong.oauthDescription.contains("short-lived"))

        let otherKey = try admin.server.writeOtherKey()
        let wrongKey = try admin.exchange(try admin.jwt(key: otherKey))
        #expect(wrongKey.status == 400 && wrongKey.oauthDescription == "Invalid JWT Signature.", "\(wrongKey.body)")

        let wrongIssuer = try admin.exchange(try admin.jwt(changes: ["iss": "someone@else.iam.gserviceaccount.com"]))
        #expect(wrongIssuer.status == 400 && wrongIssuer.oauthError == "invalid_grant")
        let commaScopes = try admin.exchange(
            try admin.jwt(changes: ["scope": "\(FirebaseServer.remoteConfigScope),\(FirebaseServer.messagingScope)"]))
        #expect(commaScopes.status == 400 && commaScopes.oauthError == "invalid_scope")
        let hs256 = try admin.exchange(try admin.jwt(header: ["alg": "HS256", "typ": "JWT"]))
        #expect(hs256.status == 400 && hs256.oauthDescription.contains("RS256"))

        let grant = try admin.call(
            "POST", "/token", headers: ["Content-Type: application/x-www-form-urlencoded"],
            body: "grant_type=client_credentials&assertion=x")
        #expect(grant.status == 400 && grant.oauthError == "unsupported_grant_type")
        #expect(admin.server.requests(api: "oauth-token").filter { $0["status"] as? Int == 200 }.count == 1)
    }

    @Test func remoteConfigGivesETagsOnlyWithGzipAndRefusesStaleOnes() throws {
        let (_, admin) = try makeAdmin()
        let token = try admin.token()

        let plain = try admin.get(token, gzip: false)
        #expect(plain.status == 200, "\(plain.body)")
        #expect(plain.headers["etag"] == nil, "no ETag without Accept-Encoding: gzip")
        #expect(!plain.gzip)
        let zipped = try admin.get(token)
        #expect(zipped.headers["etag"] == "etag-rc-test-0")
        #expect(zipped.gzip, "the answer is compressed when gzip is accepted")

        let first = try admin.put(token, Self.template("hello", description: "first"), ifMatch: "etag-rc-test-0")
        #expect(first.status == 200, "\(first.body)")
        #expect(first.headers["etag"] == "etag-rc-test-1")
        let version = try #require(first.json?["version"] as? [String: Any])
        #expect(version["versionNumber"] as? String == "1")
        #expect(version["updateType"] as? String == "INCREMENTAL_UPDATE")
        #expect(version["updateOrigin"] as? String == "REST_API")
        #expect(version["description"] as? String == "first")
        #expect((version["updateUser"] as? [String: String])?["email"] == admin.account.clientEmail)

        let stale = try admin.put(token, Self.template("again"), ifMatch: "etag-rc-test-0")
        #expect(stale.status == 409 && stale.googleStatus == "ABORTED", "\(stale.body)")
        try admin.server.updateMode(["staleEtagStatus": 412])
        let stale412 = try admin.put(token, Self.template("again"), ifMatch: "etag-rc-test-0")
        #expect(stale412.status == 412 && stale412.googleStatus == "FAILED_PRECONDITION")
        let noIfMatch = try admin.put(token, Self.template("again"), ifMatch: nil)
        #expect(noIfMatch.status == 400 && noIfMatch.message.contains("If-Match"))

        // Validate only: an ETag ending in -0, nothing written.
        let validated = try admin.put(
            token, Self.template("checked"), ifMatch: "etag-rc-test-1", query: "?validateOnly=true")
        #expect(validated.status == 200, "\(validated.body)")
        #expect(validated.headers["etag"] == "etag-rc-test-1-0")
        #expect(admin.server.adminVersions().count == 1)
        #expect(try admin.get(token).headers["etag"] == "etag-rc-test-1")
        let reused = try admin.put(token, Self.template("x"), ifMatch: "etag-rc-test-1-0")
        #expect(reused.status == 412, "a validate-only ETag is not the template's")

        // Validation as the REST reference describes it.
        var duplicate = Self.template("dup")
        var parameters = try #require(duplicate["parameters"] as? [String: Any])
        parameters["count"] = ["defaultValue": ["value": "4"]]
        duplicate["parameters"] = parameters
        let duplicated = try admin.put(token, duplicate, ifMatch: "*")
        #expect(duplicated.status == 400 && duplicated.message.contains("'count' is used more than once"))
        let outputOnly = try admin.put(token, ["version": ["versionNumber": "7"]], ifMatch: "*")
        #expect(outputOnly.status == 400 && outputOnly.message.contains("output only"))
        let unknownCondition = try admin.put(
            token, ["parameters": ["a": ["conditionalValues": ["nope": ["value": "1"]]]]], ifMatch: "*")
        #expect(unknownCondition.status == 400 && unknownCondition.message.contains("'nope'"))
        let notNumber = try admin.put(
            token, ["parameters": ["a": ["defaultValue": ["value": "many"], "valueType": "NUMBER"]]], ifMatch: "*")
        #expect(notNumber.status == 400 && notNumber.message.contains("not a number"))

        let forced = try admin.put(token, Self.template("forced"), ifMatch: "*")
        #expect(forced.status == 200)
        #expect((forced.json?["version"] as? [String: Any])?["updateType"] as? String == "FORCED_UPDATE")
        #expect(admin.server.adminTemplate()?.version == 2)

        // Credentials: none, unknown, missing scope.
        let anonymous = try admin.call("GET", admin.remoteConfig, headers: ["Accept-Encoding: gzip"])
        #expect(anonymous.status == 401 && anonymous.googleStatus == "UNAUTHENTICATED")
        #expect(try admin.get("ya29.forged").status == 401)
        let messagingOnly = try admin.token(scope: FirebaseServer.messagingScope)
        let wrongScope = try admin.get(messagingOnly)
        #expect(wrongScope.status == 403 && wrongScope.googleStatus == "PERMISSION_DENIED")
        #expect(
            try admin.call("GET", "/v1/projects/other/remoteConfig", headers: ["Authorization: Bearer \(token)"]).status
                == 403)
        let log = admin.server.requests(api: "rc-put")
        #expect(log.count == 11 && log.first?["method"] as? String == "PUT")
        #expect((log.first?["headers"] as? [String: String])?["if-match"] == "etag-rc-test-0")
    }

    @Test func versionsAreListedNewestFirstAndRollbackRepublishesAnOldOne() throws {
        let (_, admin) = try makeAdmin()
        let token = try admin.token()
        for greeting in ["one", "two", "three"] {
            #expect(try admin.put(token, Self.template(greeting), ifMatch: "*").status == 200)
        }
        let page = try admin.call(
            "GET", admin.remoteConfig + ":listVersions?pageSize=2", headers: ["Authorization: Bearer \(token)"])
        #expect(page.status == 200, "\(page.body)")
        let versions = try #require(page.json?["versions"] as? [[String: Any]])
        #expect(versions.map { $0["versionNumber"] as? String } == ["3", "2"])
        let next = try #require(page.json?["nextPageToken"] as? String)
        let rest = try admin.call(
            "GET", admin.remoteConfig + ":listVersions?pageSize=2&pageToken=\(next)",
            headers: ["Authorization: Bearer \(token)"])
        #expect((rest.json?["versions"] as? [[String: Any]])?.map { $0["versionNumber"] as? String } == ["1"])
        #expect(rest.json?["nextPageToken"] == nil)
        let tooBig = try admin.call(
            "GET", admin.remoteConfig + ":listVersions?pageSize=301", headers: ["Authorization: Bearer \(token)"])
        #expect(tooBig.status == 400)

        let rolledBack = try admin.post(token, admin.remoteConfig + ":rollback", ["versionNumber": "1"])
        #expect(rolledBack.status == 200, "\(rolledBack.body)")
        #expect(rolledBack.headers["etag"] == "etag-rc-test-4")
        let version = try #require(rolledBack.json?["version"] as? [String: Any])
        #expect(version["versionNumber"] as? String == "4")
        #expect(version["updateType"] as? String == "ROLLBACK")
        #expect(version["rollbackSource"] as? String == "1")
        let greeting = (rolledBack.json?["parameters"] as? [String: Any])?["greeting"] as? [String: Any]
        #expect((greeting?["defaultValue"] as? [String: String])?["value"] == "one")
        #expect(try admin.post(token, admin.remoteConfig + ":rollback", ["versionNumber": "9"]).status == 404)
        #expect(try admin.post(token, admin.remoteConfig + ":rollback", ["versionNumber": "4"]).status == 404)
        let old = try admin.get(token, query: "?versionNumber=2")
        #expect((old.json?["version"] as? [String: Any])?["versionNumber"] as? String == "2")

        // The server template is a namespace of its own.
        let server = try admin.get(token, namespace: "firebase-server")
        #expect(server.status == 200 && server.headers["etag"] == "etag-rc-test-0")
        #expect(try admin.get(token, namespace: "nope").status == 400)
    }

    @Test func fcmValidatesMessagesAsDocumented() throws {
        let (_, admin) = try makeAdmin()
        let token = try admin.token()
        let stale: [String: Any] = [
            "topic": "PUSH_RC", "data": ["CONFIG_STATE": "STALE", "templateVersion": "4"],
            "apns": ["headers": ["apns-priority": "5"], "payload": ["aps": ["content-available": 1]]],
        ]
        let sent = try admin.send(token, stale)
        #expect(sent.status == 200, "\(sent.body)")
        #expect((sent.json?["name"] as? String)?.hasPrefix("projects/rc-test/messages/") == true)
        #expect(admin.server.fcmMessages.count == 1)
        #expect(admin.server.fcmMessages.first?["notes"] as? [String] == [])
        #expect(((admin.server.fcmMessages.first?["message"] as? [String: Any])?["topic"] as? String) == "PUSH_RC")

        let big = String(repeating: "x", count: 2100)
        let tooBig = try admin.send(token, ["topic": "PUSH_RC", "data": ["blob": big]])
        #expect(tooBig.status == 400 && tooBig.googleStatus == "INVALID_ARGUMENT")
        #expect(tooBig.message.contains("2048"))
        let details = tooBig.error["details"] as? [[String: Any]] ?? []
        #expect(details.contains { $0["errorCode"] as? String == "INVALID_ARGUMENT" })
        #expect(
            try admin.send(token, ["token": "device-token", "data": ["blob": big]]).status == 200, "4096 for a token")

        let reserved = try admin.send(token, ["topic": "PUSH_RC", "data": ["google.sent_time": "1"]])
        #expect(reserved.status == 400 && reserved.message.contains("reserved"))
        let twoTargets = try admin.send(token, ["topic": "PUSH_RC", "token": "t"])
        #expect(twoTargets.status == 400)
        let prefixed = try admin.send(token, ["topic": "/topics/PUSH_RC"])
        #expect(prefixed.status == 400 && prefixed.message.contains("/topics/"))
        let number = try admin.send(token, ["topic": "PUSH_RC", "data": ["templateVersion": 4]])
        #expect(number.status == 400)

        // Data-only without apns-priority 5: FCM accepts it; the log notes it.
        #expect(try admin.send(token, ["topic": "PUSH_RC", "data": ["CONFIG_STATE": "STALE"]]).status == 200)
        #expect((admin.server.fcmMessages.last?["notes"] as? [String])?.first?.contains("apns-priority") == true)

        let validated = try admin.send(token, stale, validateOnly: true)
        #expect(validated.json?["name"] as? String == "projects/rc-test/messages/fake_message_id")
        #expect(admin.server.fcmMessages.count == 3, "validate_only sends nothing")
        let remoteConfigOnly = try admin.token(scope: FirebaseServer.remoteConfigScope)
        #expect(try admin.send(remoteConfigOnly, stale).status == 403)
    }

    @Test func injectedFailuresExpiredTokensAndAConcurrentPublish() throws {
        let (_, admin) = try makeAdmin()
        let token = try admin.token()
        try admin.server.setAdminFailures([
            ["api": "rc-get", "status": 429, "retryAfter": "1", "times": 1],
            ["api": "token", "status": 503, "times": 1],
        ])
        let throttled = try admin.get(token)
        #expect(throttled.status == 429 && throttled.headers["retry-after"] == "1")
        #expect(throttled.googleStatus == "RESOURCE_EXHAUSTED")
        #expect(try admin.get(token).status == 200, "used once")
        let unavailable = try admin.exchange(try admin.jwt())
        #expect(unavailable.status == 503 && unavailable.oauthError == "internal_failure")
        #expect(try admin.exchange(try admin.jwt()).status == 200)

        try admin.server.expireAccessTokens()
        let fresh = try admin.token()
        let expired = try admin.get(token)
        #expect(expired.status == 401 && expired.message.contains("expired"))
        #expect(try admin.get(fresh).status == 200, "a token issued after the test asked works")

        // Someone publishes between this client's GET and PUT: the PUT's ETag is stale.
        let read = try admin.get(fresh)
        let etag = try #require(read.headers["etag"])
        try admin.server.publishBeforeNextPut(["parameters": ["other": ["defaultValue": ["value": "theirs"]]]])
        let conflict = try admin.put(fresh, Self.template("mine"), ifMatch: etag)
        #expect(conflict.status == 409, "\(conflict.body)")
        let current = try #require(admin.server.adminTemplate())
        #expect(current.version == 1)
        #expect((current.template["parameters"] as? [String: Any])?["other"] != nil)
        #expect(admin.server.adminVersions().first?["updateOrigin"] as? String == "CONSOLE")
        let newEtag = try #require(try admin.get(fresh).headers["etag"])
        #expect(try admin.put(fresh, Self.template("mine"), ifMatch: newEtag).status == 200)
        #expect(admin.server.adminTemplate()?.version == 2)

        // The same concurrent change again: it happens again, once.
        try admin.server.publishBeforeNextPut(["parameters": ["other": ["defaultValue": ["value": "theirs"]]]])
        #expect(try admin.put(fresh, Self.template("mine"), ifMatch: "etag-rc-test-2").status == 409)
        #expect(try admin.put(fresh, Self.template("mine"), ifMatch: "etag-rc-test-3").status == 200)
        #expect(admin.adminVersionOrigins == ["CONSOLE", "REST_API", "CONSOLE", "REST_API"])
    }

    @Test func aSeededTemplateIsVersionOneOnBothSides() throws {
        let (_, admin) = try makeAdmin()
        try admin.server.setMode([
            "apiKey": FirebaseServerTests.apiKey, "project": Self.project, "appId": FirebaseServerTests.appId,
            "adminTemplate": Self.template("seeded"),
            "template": ["version": 9, "entries": ["greeting": "from the mode"]],
        ])
        let device = FirebaseServerTests()
        let (_, authToken) = try device.install(admin.server)
        let fetched = try device.fetch(
            admin.server, headers: FirebaseServerTests.fetchHeaders(token: authToken),
            body: FirebaseServerTests.fetchBody(token: authToken))
        #expect(fetched.json?["templateVersion"] as? String == "1", "the admin template wins over the mode's")
        #expect(fetched.json?["entries"] as? [String: String] == ["greeting": "seeded", "count": "3"])

        let token = try admin.token()
        let read = try admin.get(token)
        #expect(read.headers["etag"] == "etag-rc-test-1")
        #expect((read.json?["version"] as? [String: Any])?["updateOrigin"] as? String == "CONSOLE")
        #expect(admin.server.adminTemplate()?.version == 1)

        try admin.server.setAdminFailures([["api": "rc-gte", "status": 503]])
        let misspelt = try admin.get(token)
        #expect(
            misspelt.status == 500 && misspelt.message.contains("adminFailures[0]"), "a typo does not pass silently")
    }

    @Test func aRESTPublishReachesTheDevicesFetchAndRealtimeStream() throws {
        let (_, admin) = try makeAdmin()
        let device = FirebaseServerTests()
        try admin.server.setMode([
            "apiKey": FirebaseServerTests.apiKey, "project": Self.project, "appId": FirebaseServerTests.appId,
        ])
        let (_, authToken) = try device.install(admin.server)
        let stream = try FirebaseServerTests.Connection(port: admin.server.port)
        try stream.send(
            "POST", FirebaseServerTests.realtimeTarget, headers: FirebaseServerTests.realtimeHeaders(token: authToken),
            body: FirebaseServerTests.realtimeBody(lastKnown: "0"))
        #expect(try stream.readHead().status == 200)
        #expect(admin.server.wait { admin.server.openStreams == 1 })

        let token = try admin.token()
        #expect(try admin.put(token, Self.template("from REST"), ifMatch: "etag-rc-test-0").status == 200)
        #expect(stream.readChunk() == .data("{\"latestTemplateVersionNumber\": \"1\"}\n"))

        let fetched = try device.fetch(
            admin.server, headers: FirebaseServerTests.fetchHeaders(token: authToken),
            body: FirebaseServerTests.fetchBody(token: authToken))
        #expect(fetched.status == 200, "\(fetched.body)")
        #expect(fetched.json?["templateVersion"] as? String == "1")
        #expect(fetched.headers["etag"] == "\"etag-1\"")
        // Static defaults from the top level and the groups; useInAppDefault left out.
        #expect(fetched.json?["entries"] as? [String: String] == ["greeting": "from REST", "count": "3"])

        #expect(try admin.post(token, admin.remoteConfig + ":rollback", ["versionNumber": "1"]).status == 404)
        #expect(try admin.put(token, Self.template("second"), ifMatch: "*").status == 200)
        #expect(stream.readChunk() == .data("{\"latestTemplateVersionNumber\": \"2\"}\n"))
        #expect(try admin.post(token, admin.remoteConfig + ":rollback", ["versionNumber": "1"]).status == 200)
        #expect(stream.readChunk() == .data("{\"latestTemplateVersionNumber\": \"3\"}\n"))
        let rolledBack = try device.fetch(
            admin.server, headers: FirebaseServerTests.fetchHeaders(token: authToken, etag: "\"etag-2\""),
            body: FirebaseServerTests.fetchBody(token: authToken))
        #expect(rolledBack.json?["templateVersion"] as? String == "3")
        #expect((rolledBack.json?["entries"] as? [String: String])?["greeting"] == "from REST")
    }
}
