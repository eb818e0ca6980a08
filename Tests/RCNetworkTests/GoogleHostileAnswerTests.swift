import Foundation
import RCCore
import TestSupport
import Testing

@testable import RCGoogle

/// RCGoogle against answers no Google server should give (Tests/Fixtures/hostile_google.py): each
/// must end in an error naming what was wrong, never in a credential sent elsewhere, an unbounded
/// body, a header value that cannot be sent back, or a caller that cannot be stopped.
/// Time-limited: its async tests wait on gates, continuations or peers, and a hang must fail, not block CI.
@Suite(.timeLimit(.minutes(10))) struct GoogleHostileAnswerTests {
    static let tokenAnswer = #"{"access_token":"ya29.stolen","expires_in":3600,"token_type":"Bearer"}"#

    /// A redirect would carry the signed assertion (a credential for an hour) or a template to a
    /// host the key file never named, and from loopback over plain http to another machine: the
    /// answer is an error instead, and the other host sees nothing.
    @Test func tokenExchangesAndAPICallsNeverFollowARedirect() async throws {
        try await TemporaryDirectory.with { directory in
            let elsewhere = try HostileGoogle(
                in: directory, name: "elsewhere", mode: .object([("body", .string(Self.tokenAnswer))]))
            let tokenServer = try HostileGoogle(
                in: directory, name: "token",
                mode: .object([
                    ("status", .integer(307)),
                    ("headers", .object([("Location", .string(elsewhere.origin + "/token"))])),
                ]))
            let keys = try TestServiceAccount(in: directory, tokenURI: tokenServer.origin + "/token")
            let tokens = AccessTokens(
                account: try keys.account, scopes: [GoogleScope.remoteConfig],
                retry: RecordingSleeper().policy(attempts: 1))
            do throws(GoogleError) {
                let token = try await tokens.token()
                Issue.record("a redirected token request gave \(token)")
            } catch {
                #expect(error.status == 307)
            }
            #expect(tokenServer.requests.count == 1)
            #expect(elsewhere.requests.isEmpty, "the assertion went to the redirect's target")

            // An API call redirected elsewhere: the template in its body stays here too.
            let google = try FakeGoogle(in: directory)
            let redirecting = try HostileGoogle(
                in: directory, name: "api",
                mode: .object([
                    ("status", .integer(308)),
                    ("headers", .object([("Location", .string(elsewhere.origin + "/v1/projects/p/remoteConfig"))])),
                ]))
            let config = RemoteConfigAPI(
                api: try google.api(retry: RecordingSleeper().policy(attempts: 1)), project: "demo-project",
                endpoint: redirecting.origin)
            do throws(GoogleError) {
                _ = try await config.publish(.object([("parameters", .object([]))]), etag: "etag-1")
                Issue.record("a redirected publish succeeded")
            } catch {
                #expect(error.status == 308)
            }
            #expect(elsewhere.requests.isEmpty, "the template went to the redirect's target")
        }
    }

    /// The size limit holds for the decoded body: 17 MiB of zeros are 17 KB gzipped.
    @Test func aGzipBombIsCutAtTheDecodedSizeLimit() async throws {
        try await TemporaryDirectory.with { directory in
            let google = try FakeGoogle(in: directory)
            let bomb = try HostileGoogle(in: directory, mode: .object([("gzipZeros", .integer(17 << 20))]))
            let config = RemoteConfigAPI(
                api: try google.api(retry: RecordingSleeper().policy(attempts: 1)), project: "demo-project",
                endpoint: bomb.origin)
            do throws(GoogleError) {
                _ = try await config.get()
                Issue.record("a 17 MiB body was read")
            } catch {
                #expect(error.description.contains("larger than \(16 << 20) bytes"))
            }
        }
    }

    /// The ETag is sent back as `If-Match` and shown to the operator: one with control characters,
    /// or kilobytes long, is no ETag Google gives, and is refused when it arrives.
    @Test(arguments: ["etag-\u{1b}]0;pwned\u{07}-1", String(repeating: "e", count: 4_000), "etag-\u{202e}1"])
    func anETagThatIsNoHeaderValueIsRefusedOnArrival(_ etag: String) async throws {
        try await TemporaryDirectory.with { directory in
            let google = try FakeGoogle(in: directory)
            let hostile = try HostileGoogle(
                in: directory,
                mode: .object([
                    ("body", .string(#"{"version":{"versionNumber":"1"}}"#)),
                    ("headers", .object([("ETag", .string(etag))])),
                ]))
            let config = RemoteConfigAPI(
                api: try google.api(retry: RecordingSleeper().policy(attempts: 1)), project: "demo-project",
                endpoint: hostile.origin)
            do throws(GoogleError) {
                let (_, received) = try await config.get()
                Issue.record("accepted the ETag \(TextEscaping.terminal(received))")
            } catch {
                #expect(error.description.contains("ETag"))
                #expect(!error.description.contains("\u{1b}") && !error.description.contains("\u{202e}"))
                #expect(error.description.utf8.count < 1_000)
            }
        }
    }

    /// SIGTERM during a token exchange that is waiting out a Retry-After: the caller's cancellation
    /// reaches the exchange, which stops at once instead of finishing its retries.
    @Test(.timeLimit(.minutes(10)))
    func cancellingTheCallerStopsATokenExchangeWaitingToRetry() async throws {
        try await TemporaryDirectory.with { directory in
            let tokenServer = try HostileGoogle(
                in: directory,
                mode: .object([
                    ("status", .integer(503)), ("headers", .object([("Retry-After", .string("30"))])),
                    ("body", .string(#"{"error":"temporarily_unavailable"}"#)),
                ]))
            let keys = try TestServiceAccount(in: directory, tokenURI: tokenServer.origin + "/token")
            var retry = RetryPolicy()
            retry.attempts = 2
            let tokens = AccessTokens(account: try keys.account, scopes: [GoogleScope.remoteConfig], retry: retry)
            let task = Task { () async throws(GoogleError) -> String in try await tokens.token() }
            // Polled without blocking (the async `eventually`): the synchronous one would hold one of
            // the two cooperative threads the exchange itself needs. The bound is for a failing run
            // only: while the whole suite runs, synchronous tests can hold both threads for a minute and more.
            #expect(await eventually(.seconds(300)) { !tokenServer.requests.isEmpty })
            #expect(tokenServer.requests.count == 1, "the first exchange arrived")
            task.cancel()
            // No clock: an exchange that ignored the cancellation would wait out the Retry-After, ask
            // again (a second request) and fail with the 503, not as cancelled.
            let result = await task.result
            guard case let .failure(error) = result else {
                Issue.record("a 503 gave a token")
                return
            }
            #expect("\(error)".contains("cancelled"))
            #expect(tokenServer.requests.count == 1)
        }
    }

    /// listVersions as a loop: a server that hands out a new page token on every page, with an empty
    /// page or one version each time, would page forever (the repeated-token check cannot see it).
    /// Google keeps 300 versions; the pages stop well beyond that, with an error.
    @Test(
        .timeLimit(.minutes(10)),
        arguments: [#"{"nextPageToken":"t{n}"}"#, #"{"versions":[{"versionNumber":"{n}"}],"nextPageToken":"t{n}"}"#])
    func listVersionsStopsPagingAServerThatNeverEnds(_ page: String) async throws {
        try await TemporaryDirectory.with { directory in
            let google = try FakeGoogle(in: directory)
            let hostile = try HostileGoogle(in: directory, mode: .object([("body", .string(page))]))
            let config = RemoteConfigAPI(
                api: try google.api(retry: RecordingSleeper().policy(attempts: 1)), project: "demo-project",
                endpoint: hostile.origin)
            do throws(GoogleError) {
                let versions = try await config.versions()
                Issue.record("paging ended with \(versions.count) versions")
            } catch {
                #expect(error.description.contains("pages"), "\(error)")
            }
            #expect(hostile.requests.count <= 10)
        }
    }
}
