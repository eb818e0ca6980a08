import Foundation
import RCCore
import RCSystem
import Synchronization
import TestSupport
import Testing

@testable import RCGoogle

/// RCGoogle against the fake Google backend, a real server process: the token exchange and its
/// cache, a 401 renewing the token once, retries honouring Retry-After, gzip-only ETags, publishing
/// with If-Match, validate-only, versions, rollback and FCM send.
/// Time-limited: its async tests wait on gates, continuations or peers, and a hang must fail, not block CI.
@Suite(.timeLimit(.minutes(10))) struct GoogleAPITests {
    static let seed: JSONValue = .object([
        (
            "parameters",
            .object([
                (
                    "welcome",
                    .object([
                        ("defaultValue", .object([("value", .string("hello"))])),
                        ("valueType", .string("STRING")),
                    ])
                )
            ])
        )
    ])

    @Test func tokensAreExchangedOnceAndRenewedAMinuteBeforeTheyExpire() async throws {
        try await TemporaryDirectory.with { directory in
            let google = try FakeGoogle(in: directory, mode: .object([("accessTokenExpiresIn", .integer(90))]))
            let start = Timestamp.now()
            let clock = TestClock(start)
            let tokens = AccessTokens(
                account: try google.keys.account, scopes: [GoogleScope.remoteConfig], clock: { clock.now })
            let first = try await tokens.token()
            #expect(first.hasPrefix("ya29."))
            #expect(try await tokens.token() == first)
            clock.advance(to: .seconds(29))  // 61 s left: still good
            #expect(try await tokens.token() == first)
            #expect(google.requests(api: "oauth-token").count == 1)
            clock.advance(to: .seconds(31))  // 59 s left: renewed
            let second = try await tokens.token()
            #expect(second != first)
            let exchanges = google.requests(api: "oauth-token")
            #expect(exchanges.map { $0["status"] } == [.integer(200), .integer(200)])
            let request = try #require(exchanges.first)
            #expect(request["headers"]?["content-type"] == .string("application/x-www-form-urlencoded"))
            #expect(request["form"]?["grant_type"] == .string("urn:ietf:params:oauth:grant-type:jwt-bearer"))
            #expect(request["headers"]?["user-agent"]?.stringValue?.hasPrefix("rcadmin/") == true)
            // invalidate() drops the cached token: the next call asks again.
            await tokens.invalidate()
            _ = try await tokens.token()
            #expect(google.requests(api: "oauth-token").count == 3)
        }
    }

    @Test func theTokenEndpointsRefusalNamesTheURLAndGooglesWords() async throws {
        try await TemporaryDirectory.with { directory in
            let google = try FakeGoogle(in: directory)
            // A key file whose key is not the one the server knows: the signature does not verify.
            let other = try TemporaryDirectory.with { elsewhere in
                try TestServiceAccount(in: elsewhere, tokenURI: google.keys.account.tokenURI).account
            }
            let impostor = ServiceAccount(
                projectId: other.projectId, clientEmail: other.clientEmail, privateKeyId: other.privateKeyId,
                privateKey: other.privateKey, tokenURI: other.tokenURI, path: "impostor.json")
            do throws(GoogleError) {
                _ = try await AccessTokens(account: impostor, scopes: [GoogleScope.remoteConfig]).token()
                Issue.record("a token for a key the server does not know")
            } catch {
                #expect(error.status == 400)
                #expect(error.googleStatus == "invalid_grant")
                #expect(
                    error.description.hasPrefix(
                        "token request to http://127.0.0.1:\(google.port)/token: HTTP 400 invalid_grant: "))
            }
        }
    }

    @Test func a401RenewsTheTokenOnceAndRetries() async throws {
        try await TemporaryDirectory.with { directory in
            let google = try FakeGoogle(in: directory, mode: .object([("adminTemplate", Self.seed)]))
            let config = try google.remoteConfig()
            _ = try await config.get()
            try google.setMode(.object([("adminTemplate", Self.seed), ("expireAccessTokens", .integer(1))]))
            let (template, _) = try await config.get()
            #expect(template["parameters"]?["welcome"] != nil)
            #expect(
                google.requests.compactMap { record in
                    record["api"]?.stringValue.map { "\($0) \(record["status"]?.compactText ?? "")" }
                } == ["oauth-token 200", "rc-get 200", "rc-get 401", "oauth-token 200", "rc-get 200"])

            // A 401 after the renewal is an error, not a loop.
            try google.setMode(
                .object([
                    (
                        "adminFailures",
                        .array([
                            .object([("api", .string("rc-get")), ("status", .integer(401)), ("times", .integer(2))])
                        ])
                    )
                ]))
            do throws(GoogleError) {
                _ = try await config.get()
                Issue.record("a second 401 was not an error")
            } catch {
                #expect(error.status == 401)
                #expect(error.description.contains("after renewing the token"))
            }
            #expect(google.requests(api: "oauth-token").count == 3)
        }
    }

    @Test func a429WaitsItsRetryAfter() async throws {
        try await TemporaryDirectory.with { directory in
            let google = try FakeGoogle(in: directory)
            try google.setMode(
                .object([
                    (
                        "adminFailures",
                        .array([
                            .object([
                                ("api", .string("rc-get")), ("status", .integer(429)), ("retryAfter", .string("1")),
                            ])
                        ])
                    )
                ]))
            _ = try await google.remoteConfig().get()  // the real sleeper: one second
            let gets = google.requests(api: "rc-get")
            #expect(gets.map { $0["status"] } == [.integer(429), .integer(200)])
            let times = gets.compactMap { record -> Double? in
                switch record["time"] {
                case let .double(t)?: t
                case let .integer(t)?: Double(t)
                default: nil
                }
            }
            try #require(times.count == 2)
            #expect(times[1] - times[0] >= 0.95)
        }
    }

    @Test func retriesFollowRetryAfterOrTheBackoffAndAreBounded() async throws {
        try await TemporaryDirectory.with { directory in
            let google = try FakeGoogle(in: directory)
            let sleeper = RecordingSleeper()
            let failures: [JSONValue] = [
                .object([("api", .string("rc-get")), ("status", .integer(503)), ("retryAfter", .string("7"))]),
                .object([("api", .string("rc-get")), ("status", .integer(500))]),
                .object([("api", .string("rc-get")), ("status", .integer(429))]),
            ]
            try google.setMode(.object([("adminFailures", .array(failures))]))
            _ = try await google.remoteConfig(retry: sleeper.policy()).get()
            // Retry-After 7 s, then the backoff (0.5 s doubling; no jitter here) for the two without one.
            #expect(sleeper.recorded == [.seconds(7), .seconds(1), .seconds(2)])
            #expect(google.requests(api: "rc-get").count == 4)

            // Bounded: three attempts, then Google's answer as the error.
            try google.setMode(
                .object([
                    (
                        "adminFailures",
                        .array([
                            .object([("api", .string("rc-get")), ("status", .integer(503)), ("times", .integer(9))])
                        ])
                    )
                ]))
            let bounded = RecordingSleeper()
            let boundedConfig = try google.remoteConfig(retry: bounded.policy(attempts: 3))
            do throws(GoogleError) {
                _ = try await boundedConfig.get()
                Issue.record("retried for good")
            } catch {
                #expect(error.status == 503)
                #expect(error.googleStatus == "UNAVAILABLE")
                #expect(error.description.contains("gave up after 3 attempts"))
            }
            #expect(bounded.recorded.count == 2)

            // A Retry-After longer than the tool waits ends the retries at once.
            try google.setMode(
                .object([
                    (
                        "adminFailures",
                        .array([
                            .object([
                                ("api", .string("rc-get")), ("status", .integer(429)), ("retryAfter", .string("3600")),
                            ])
                        ])
                    )
                ]))
            let patient = RecordingSleeper()
            let patientConfig = try google.remoteConfig(retry: patient.policy())
            do throws(GoogleError) {
                _ = try await patientConfig.get()
                Issue.record("waited an hour")
            } catch {
                #expect(error.status == 429)
                #expect(error.description.contains("asks to wait 1h"))
            }
            #expect(patient.recorded.isEmpty)
        }
    }

    @Test func aRefusedConnectionIsRetriedThenReported() async throws {
        try await TemporaryDirectory.with { directory in
            let google = try FakeGoogle(in: directory)
            let sleeper = RecordingSleeper()
            let closed = try RefusingPort()
            defer { withExtendedLifetime(closed) {} }  // held until the test ends
            let config = RemoteConfigAPI(
                api: try google.api(retry: sleeper.policy(attempts: 2)), project: "demo-project",
                endpoint: "http://127.0.0.1:\(closed.port)")
            do throws(GoogleError) {
                _ = try await config.get()
                Issue.record("a closed port answered")
            } catch {
                #expect(error.status == nil)
                #expect(error.description.contains("(connect)"))
                #expect(error.description.contains("gave up after 2 attempts"))
            }
            #expect(sleeper.recorded == [.milliseconds(500)])
        }
    }

    @Test func theETagComesWithGzipAndPublishesNeedIt() async throws {
        try await TemporaryDirectory.with { directory in
            let google = try FakeGoogle(in: directory, mode: .object([("adminTemplate", Self.seed)]))
            let config = try google.remoteConfig()
            let (template, etag) = try await config.get()
            #expect(etag == "etag-demo-project-1")
            #expect(template["parameters"]?["welcome"]?["defaultValue"]?["value"] == .string("hello"))
            #expect(template["version"]?["versionNumber"] == .string("1"))
            let get = try #require(google.requests(api: "rc-get").last)
            #expect(get["headers"]?["accept-encoding"]?.stringValue?.contains("gzip") == true)
            #expect(get["headers"]?["authorization"]?.stringValue?.hasPrefix("Bearer ya29.") == true)

            // Validation: the server answers the "-0" ETag, the caller gets the original back.
            var changed = try #require(template.objectMembers)
            changed.removeAll { $0.key == "parameters" }
            changed.append(
                (
                    "parameters",
                    .object([("welcome", .object([("defaultValue", .object([("value", .string("hi"))]))]))])
                ))
            changed.removeAll { $0.key == "version" }
            changed.append(("version", .object([("versionNumber", .string("1")), ("description", .string("say hi"))])))
            changed.append(("etag", .string(etag)))
            let (_, validated) = try await config.publish(.object(changed), etag: etag, validateOnly: true)
            #expect(validated == etag)
            let validation = try #require(google.requests(api: "rc-put").last)
            #expect(validation["query"]?["validateOnly"] == .string("true"))
            #expect(validation["headers"]?["if-match"] == .string(etag))

            // The real publish with the ETag the validation handed back; version cut to its description.
            let (published, newETag) = try await config.publish(.object(changed), etag: validated)
            #expect(newETag == "etag-demo-project-2")
            #expect(published["parameters"]?["welcome"]?["defaultValue"]?["value"] == .string("hi"))
            let put = try #require(google.requests(api: "rc-put").last)
            #expect(put["status"] == .integer(200))
            #expect(put["body"]?["version"] == .object([("description", .string("say hi"))]))
            #expect(put["body"]?["etag"] == nil)

            // The old ETag is stale now: Google's 409 ABORTED, with its words.
            do throws(GoogleError) {
                _ = try await config.publish(.object(changed), etag: etag)
                Issue.record("a stale ETag was accepted")
            } catch {
                #expect(error.status == 409)
                #expect(error.googleStatus == "ABORTED")
                #expect(error.message.contains("VERSION_MISMATCH"))
            }
            // No ETag and no force: refused here, nothing sent; force sends "*".
            let puts = google.requests(api: "rc-put").count
            await #expect(throws: GoogleError.self) { try await config.publish(.object(changed), etag: nil) }
            await #expect(throws: GoogleError.self) { try await config.publish(.object(changed), etag: "*") }
            #expect(google.requests(api: "rc-put").count == puts)
            let (_, forced) = try await config.publish(.object(changed), etag: nil, force: true)
            #expect(forced == "etag-demo-project-3")
            #expect(google.requests(api: "rc-put").last?["headers"]?["if-match"] == .string("*"))
        }
    }

    @Test func versionsArePagedAndRollbackPublishesAnOldOne() async throws {
        try await TemporaryDirectory.with { directory in
            let google = try FakeGoogle(in: directory, mode: .object([("adminTemplate", Self.seed)]))
            var config = try google.remoteConfig()
            for _ in 0..<4 { _ = try await config.publish(Self.seed, etag: nil, force: true) }  // versions 2...5
            config.pageSize = 2
            let five = try await config.versions()
            #expect(five.map { $0["versionNumber"] } == ["5", "4", "3", "2", "1"].map(JSONValue.string))
            let pages = google.requests(api: "rc-versions")
            #expect(pages.count == 3)
            #expect(pages.dropFirst().allSatisfy { $0["query"]?["pageToken"] != nil })
            let three = try await config.versions(limit: 3)
            #expect(three.map { $0["versionNumber"] } == ["5", "4", "3"].map(JSONValue.string))
            #expect(google.requests(api: "rc-versions").last?["query"]?["pageSize"] == .string("1"))

            let (rolledBack, etag) = try await config.rollback(to: 2)
            #expect(etag == "etag-demo-project-6")
            #expect(rolledBack["version"]?["rollbackSource"] == .string("2"))
            #expect(google.requests(api: "rc-rollback").last?["body"] == .object([("versionNumber", .string("2"))]))
            do throws(GoogleError) {
                _ = try await config.rollback(to: 99)
                Issue.record("rolled back to a version that never was")
            } catch {
                #expect(error.status == 404)
            }
        }
    }

    @Test func theServerTemplateHasItsOwnNamespace() async throws {
        try await TemporaryDirectory.with { directory in
            let google = try FakeGoogle(in: directory)
            let config = try google.remoteConfig(.server)
            let (_, etag) = try await config.publish(Self.seed, etag: nil, force: true)
            #expect(
                google.requests(api: "rc-put").last?["path"]
                    == .string("/v1/projects/demo-project/namespaces/firebase-server/remoteConfig"))
            let (template, read) = try await config.get()
            #expect(read == etag)
            #expect(template["parameters"] == Self.seed["parameters"])
            // The client template is untouched.
            let (client, _) = try await google.remoteConfig(.client).get()
            #expect(client["parameters"] == nil)
        }
    }

    @Test func fcmSendsValidMessagesAndReportsItsErrorCodes() async throws {
        try await TemporaryDirectory.with { directory in
            let google = try FakeGoogle(
                in: directory, mode: .object([("fcmUnregisteredTokens", .array([.string("gone-token")]))]))
            let fcm = FCMAPI(api: try google.api(), project: "demo-project", endpoint: google.endpoint)
            let stale: JSONValue = .object([
                ("topic", .string("PUSH_RC")),
                ("data", .object([("CONFIG_STATE", .string("STALE")), ("templateVersion", .string("7"))])),
                ("apns", .object([("headers", .object([("apns-priority", .string("5"))]))])),
            ])
            let name = try await fcm.send(stale)
            #expect(name.hasPrefix("projects/demo-project/messages/"))
            _ = try await fcm.send(stale, validateOnly: true)
            let sends = google.requests(api: "fcm-send")
            #expect(sends.map { $0["body"]?["validate_only"] } == [nil, .bool(true)])
            #expect(sends.first?["body"]?["message"] == (try JSONValue.parse(stale.compactText)))  // both key-sorted

            do throws(GoogleError) {
                _ = try await fcm.send(.object([("token", .string("gone-token")), ("data", .object([]))]))
                Issue.record("a message to an unregistered token was accepted")
            } catch {
                #expect(error.status == 404)
                #expect(error.errorCode == "UNREGISTERED")
            }
        }
    }

    @Test func fcmMessagesAreCheckedBeforeTheyAreSent() throws {
        func problem(_ message: JSONValue) -> String? {
            do throws(GoogleError) {
                try FCMAPI.validate(message)
                return nil
            } catch {
                return error.description
            }
        }
        let data: (Int) -> JSONValue = { size in .object([("k", .string(String(repeating: "x", count: size - 1)))]) }
        #expect(problem(.object([("topic", .string("PUSH_RC")), ("data", data(2048))])) == nil)
        #expect(
            problem(.object([("topic", .string("PUSH_RC")), ("data", data(2049))]))?.contains("2049 bytes") == true)
        #expect(problem(.object([("condition", .string("'a' in topics")), ("data", data(2049))])) != nil)
        #expect(problem(.object([("token", .string("t")), ("data", data(4096))])) == nil)
        #expect(problem(.object([("token", .string("t")), ("data", data(4097))])) != nil)
        #expect(problem(.object([("data", data(3))]))?.contains("no target") == true)
        #expect(
            problem(.object([("token", .string("t")), ("topic", .string("x"))]))?.contains("more than one target")
                == true)
        #expect(problem(.object([("topic", .string("/topics/x"))]))?.contains("without /topics/") == true)
        #expect(problem(.object([("topic", .string("a b"))]))?.contains("is not [a-zA-Z0-9-_.~%]+") == true)
        #expect(problem(.object([("topic", .string(""))]))?.contains("non-empty string") == true)
        #expect(
            problem(.object([("topic", .string("x")), ("data", .object([("n", .integer(1))]))]))
                == "FCM: check a message: message.data[n]: values must be strings (FCM carries text only), not number")
        for key in ["from", "message_type", "google.c.a", "gcm.notification.x", "GoogleKey"] {
            #expect(
                problem(.object([("topic", .string("x")), ("data", .object([(key, .string("v"))]))]))?.contains(
                    "reserved") == true)
        }
        #expect(
            problem(.object([("topic", .string("x")), ("priority", .string("high"))]))?.contains("message.priority")
                == true)
        #expect(problem(.object([("condition", .string("'a' in topics && ('b' in topics || 'c' in topics)"))])) == nil)
        let six = (1...6).map { "'t\($0)' in topics" }.joined(separator: " || ")
        #expect(problem(.object([("condition", .string(six))]))?.contains("1 to 5 topics") == true)
        #expect(problem(.string("x"))?.contains("a JSON object") == true)
    }

    @Test func aMissingETagIsAnErrorNeverAForce() {
        #expect(throws: GoogleError.self) { try RemoteConfigAPI.etag(nil, status: 200, call: "get") }
        #expect(throws: GoogleError.self) { try RemoteConfigAPI.etag("", status: 200, call: "get") }
        #expect((try? RemoteConfigAPI.etag("etag-1", status: 200, call: "get")) == "etag-1")
        do throws(GoogleError) {
            _ = try RemoteConfigAPI.etag(nil, status: 200, call: "Remote Config: get the firebase template")
        } catch {
            #expect(error.description == "Remote Config: get the firebase template: HTTP 200: no ETag in the answer")
        }
    }
}
