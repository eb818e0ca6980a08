import Foundation
import RCCore
import RCSystem
import Synchronization
import TestSupport

@testable import RCGoogle

/// The fake Google backend (Tests/Fixtures/firebase_server.py, its admin APIs) as a real process on
/// loopback, with a service account whose key file names the server's `/token`. Tests script it
/// through its mode file and read everything the client sent from its request log; the script's
/// docstring is the reference for both.
final class FakeGoogle {
    let directory: TemporaryDirectory
    let keys: TestServiceAccount
    let port: Int
    private let server: FixtureProcess

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/firebase_server.py").path

    /// `mode`: the mode file to start with (seeded templates, token lifetime…).
    init(in directory: TemporaryDirectory, mode: JSONValue = .object([])) throws {
        self.directory = directory
        try FileBytes.writeAtomically(directory.file("mode.json"), Array(mode.compactText.utf8))
        server = try FixtureProcess(["/usr/bin/python3", Self.script, directory.path], name: "the fake Google server")
        port = server.port
        keys = try TestServiceAccount(in: directory, tokenURI: "http://127.0.0.1:\(port)/token")
    }

    /// What `--endpoint` is set to: scheme, host and port of the Remote Config and FCM APIs.
    var endpoint: String { "http://127.0.0.1:\(port)" }

    /// Replaces the mode file, atomically (the server re-reads it on every request).
    func setMode(_ mode: JSONValue) throws {
        try FileBytes.writeAtomically(directory.file("mode.json"), Array(mode.compactText.utf8))
    }

    /// Every request so far, oldest first (api, method, path, query, headers, body, status, time…).
    var requests: [JSONValue] {
        let bytes = (try? directory.read("requests.log")) ?? []
        return bytes.split(separator: 0x0a).compactMap { try? JSONValue.parse($0) }
    }

    /// The requests to one API ("oauth-token", "rc-get", "rc-put", "rc-versions", "rc-rollback", "fcm-send").
    func requests(api: String) -> [JSONValue] { requests.filter { $0["api"] == .string(api) } }

    /// A client of the fake with the key file's account: tokens for Remote Config and FCM, and `retry`.
    func api(retry: RetryPolicy = RetryPolicy(), clock: @escaping @Sendable () -> Timestamp = { .now() }) throws
        -> GoogleAPI
    {
        let tokens = AccessTokens(
            account: try keys.account, scopes: [GoogleScope.remoteConfig, GoogleScope.messaging], retry: retry,
            clock: clock)
        return GoogleAPI(tokens: tokens, retry: retry)
    }

    func remoteConfig(
        _ namespace: RemoteConfigAPI.Namespace = .client, retry: RetryPolicy = RetryPolicy()
    ) throws -> RemoteConfigAPI {
        RemoteConfigAPI(api: try api(retry: retry), project: "demo-project", namespace: namespace, endpoint: endpoint)
    }
}

/// A sleeper that records what it was asked to wait and returns at once, for retry tests.
final class RecordingSleeper: Sendable {
    private let waits = Mutex<[Duration]>([])
    var recorded: [Duration] { waits.withLock { $0 } }

    func policy(attempts: Int = 5) -> RetryPolicy {
        var policy = RetryPolicy()
        policy.attempts = attempts
        policy.random = { 0.5 }  // no jitter: the backoff is exact
        policy.sleep = { [self] duration in waits.withLock { $0.append(duration) } }
        return policy
    }
}

/// A wall clock a test moves by hand: `start` plus an offset.
final class TestClock: Sendable {
    private let start: Timestamp
    private let offset = Mutex<Duration>(.zero)

    init(_ start: Timestamp) { self.start = start }

    var now: Timestamp { start + offset.withLock { $0 } }

    func advance(to offset: Duration) { self.offset.withLock { $0 = offset } }
}
