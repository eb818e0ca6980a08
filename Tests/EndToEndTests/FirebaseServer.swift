import Foundation
import Glibc
import TestSupport

/// The fake Firebase backend (Tests/Fixtures/firebase_server.py) as a real process on loopback:
/// Firebase Installations, the Remote Config fetch call and the realtime stream on one port.
/// Tests script it through its mode file (`setMode`, `publish`) and realtime script (`push`,
/// `dropStreams`), and read everything the client sent from its request log (`requests`).
/// The same process is also Google's admin side (Tests/Fixtures/google_admin.py): the service
/// account token endpoint, Remote Config REST and FCM send, set up with `makeServiceAccount` and
/// read back through `adminTemplate`, `fcmMessages` and the request log.
/// The script's docstring is the reference for every mode key and log field.
final class FirebaseServer {
    let directory: URL
    /// Held so the server's directory (inside the sandbox) outlives the server.
    let sandbox: Sandbox
    private let server: FixtureProcess
    var port: Int { server.port }

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/firebase_server.py").path

    var modePath: String { directory.appendingPathComponent("mode.json").path }
    var realtimePath: String { directory.appendingPathComponent("realtime.jsonl").path }
    var logPath: String { directory.appendingPathComponent("requests.log").path }
    var streamLogPath: String { directory.appendingPathComponent("streams.log").path }

    init(in sandbox: Sandbox) throws {
        let directory = sandbox.root.appendingPathComponent("firebase-\(UUID().uuidString.prefix(6))")
        self.directory = directory
        self.sandbox = sandbox
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for file in ["requests.log", "realtime.jsonl", "streams.log", "fcm.log"] {
            try "".write(to: directory.appendingPathComponent(file), atomically: true, encoding: .utf8)
        }
        server = try FixtureProcess(
            ["/usr/bin/python3", Self.script, directory.path], name: "the fake Firebase server")
    }

    /// The `[Source]` section of an agent.conf (the daemon's or the relay's) that follows `project`
    /// on this server, with the app id and API key the tests use; it ends with a newline.
    func sourceSection(project: String = "demo-project") -> String {
        """
        [Source]
        Type=firebase
        ProjectId=\(project)
        AppId=1:1234567890:linux:abcdef
        APIKey=test-api-key
        Endpoint=\(endpoint)

        """
    }

    /// What `Endpoint=` must be set to: scheme, host and port of all three Google APIs.
    var endpoint: String { "http://127.0.0.1:\(port)" }

    /// The mode as it is now (empty before the first `setMode`/`publish`).
    var mode: [String: Any] {
        guard let data = FileManager.default.contents(atPath: modePath) else { return [:] }
        return (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
    }

    /// Replaces the whole mode file, atomically (the server re-reads it on every request).
    func setMode(_ mode: [String: Any]) throws {
        let data = try JSONSerialization.data(withJSONObject: mode, options: [.sortedKeys])
        let temporary = directory.appendingPathComponent("mode.tmp")
        try data.write(to: temporary)
        guard rename(temporary.path, modePath) == 0 else { throw DaemonError("rename mode file") }
    }

    /// Changes some mode keys and keeps the others; a nil value removes the key.
    func updateMode(_ changes: [String: Any?]) throws {
        var current = mode
        for (key, value) in changes { current[key] = value }
        try setMode(current)
    }

    /// Publishes a template: fetches answer it (ETag "etag-<version>"), new streams compare against it.
    /// Other mode keys stay. Open streams are not told: `push` a message for that.
    func publish(version: Int, entries: [String: String]) throws {
        try updateMode(["template": ["version": version, "entries": entries] as [String: Any]])
    }

    /// Sends `message` as one chunk on every realtime stream open now.
    func push(_ message: [String: Any]) throws {
        let data = try JSONSerialization.data(withJSONObject: message, options: [.sortedKeys])
        try pushLine(String(decoding: data, as: UTF8.self))
    }

    /// Sends `line` as it is (it may be invalid JSON) as one chunk on every open stream.
    func pushLine(_ line: String) throws {
        precondition(!line.contains("\n"), "one message per line")
        guard let handle = FileHandle(forWritingAtPath: realtimePath) else { throw DaemonError("open \(realtimePath)") }
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: Data((line + "\n").utf8))  // one write: a reader never sees half a line
    }

    /// Closes every open stream abruptly: the socket closes without the terminating chunk.
    func dropStreams() throws { try push(["_drop": true]) }

    /// Ends every open stream cleanly (terminating chunk, then close).
    func closeStreams() throws { try push(["_close": true]) }

    /// Every request so far, oldest first: api, method, path, query, headers (lower-cased), body,
    /// status, problem, time, and stream (an id, for accepted realtime streams).
    var requests: [[String: Any]] { Self.jsonLines(logPath) }

    /// The requests to one API: "create", "token", "fetch", "realtime" or "unknown".
    func requests(api: String) -> [[String: Any]] { requests.filter { $0["api"] as? String == api } }

    /// Streams that ended: stream (id), event ("end"), reason ("client closed", "dropped", "closed"), time.
    var streamEnds: [[String: Any]] { Self.jsonLines(streamLogPath) }

    /// Realtime streams the server is holding open now.
    var openStreams: Int {
        let ended = Set(streamEnds.compactMap { $0["stream"] as? Int })
        return requests(api: "realtime").compactMap { $0["stream"] as? Int }.filter { !ended.contains($0) }.count
    }

    /// Polls `condition` until it holds or `timeout` seconds pass (TestSupport's `eventually`);
    /// returns whether it held.
    @discardableResult
    func wait(timeout: Double = 10, until condition: () -> Bool) -> Bool {
        eventually(timeout, condition)
    }

    private static func jsonLines(_ path: String) -> [[String: Any]] {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        }
    }
}

// MARK: - The admin side: service account, templates, FCM log, injected failures

/// A service account of the fake project, as Google's key files describe one: the key file rcadmin
/// reads, the private key that signs its JWTs, and the public key the fake's token endpoint checks.
struct TestServiceAccount {
    /// DIR/service-account.json: what `--service-account` / GOOGLE_APPLICATION_CREDENTIALS name.
    let keyFilePath: String
    /// The private key alone (PKCS#8 PEM, as in the key file), for tests that sign JWTs themselves.
    let privateKeyPath: String
    let projectId: String
    let clientEmail: String
    let privateKeyId: String
    let tokenURI: String
}

extension FirebaseServer {
    static let remoteConfigScope = "https://www.googleapis.com/auth/firebase.remoteconfig"
    static let messagingScope = "https://www.googleapis.com/auth/firebase.messaging"

    var adminStatePath: String { directory.appendingPathComponent("admin-state.json").path }
    var fcmLogPath: String { directory.appendingPathComponent("fcm.log").path }

    /// Makes the project's service account: an RSA 2048 key from `openssl genpkey`, the key file
    /// (every field Google's key files have; its token_uri is this server's /token) and the public
    /// key the server verifies JWTs with. Calling it again replaces the account. The key is the one
    /// shared by this test run unless `freshKey` (a rotated key, say).
    @discardableResult
    func makeServiceAccount(project: String = "rc-test", name: String = "rcadmin", freshKey: Bool = false) throws
        -> TestServiceAccount
    {
        let privateKeyPath = directory.appendingPathComponent("service-account-private.pem").path
        try (freshKey ? Self.newKey() : Self.sharedKey(0)).write(
            toFile: privateKeyPath, atomically: true, encoding: .utf8)
        let publicKey = try Self.openssl(["pkey", "-in", privateKeyPath, "-pubout"])
        try publicKey.write(
            toFile: directory.appendingPathComponent("service-account-public.pem").path, atomically: true,
            encoding: .utf8)
        let privateKey = try String(contentsOfFile: privateKeyPath, encoding: .utf8)
        let email = "\(name)@\(project).iam.gserviceaccount.com"
        let keyId = String(UUID().uuidString.lowercased().filter { $0 != "-" })
        let account: [String: Any] = [
            "type": "service_account",
            "project_id": project,
            "private_key_id": keyId,
            "private_key": privateKey,
            "client_email": email,
            "client_id": "1\(UInt64.random(in: 10_000_000_000...99_999_999_999))",
            "auth_uri": endpoint + "/o/oauth2/auth",
            "token_uri": endpoint + "/token",
            "auth_provider_x509_cert_url": endpoint + "/oauth2/v1/certs",
            "client_x509_cert_url": endpoint + "/robot/v1/metadata/x509/\(email)",
            "universe_domain": "googleapis.com",
        ]
        let keyFilePath = directory.appendingPathComponent("service-account.json").path
        let data = try JSONSerialization.data(withJSONObject: account, options: [.sortedKeys, .prettyPrinted])
        try data.write(to: URL(fileURLWithPath: keyFilePath))
        chmod(keyFilePath, 0o600)  // as a key file should be: rcadmin warns of one others may read
        return TestServiceAccount(
            keyFilePath: keyFilePath, privateKeyPath: privateKeyPath, projectId: project, clientEmail: email,
            privateKeyId: keyId, tokenURI: endpoint + "/token")
    }

    /// Writes a private key that is not the service account's into the server's directory; its path.
    func writeOtherKey() throws -> String {
        let path = directory.appendingPathComponent("other-key.pem").path
        try Self.sharedKey(1).write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Two RSA 2048 private keys made once per test run and shared by the tests: one costs about
    /// half a second of CPU, on two cores shared by suites running in parallel. Nil when openssl
    /// failed; `sharedKey` then makes a key per call, which reports the failure.
    private static let sharedKeys: [String]? = try? [newKey(), newKey()]

    private static func sharedKey(_ index: Int) throws -> String {
        guard let keys = sharedKeys else { return try newKey() }
        return keys[index]
    }

    /// A new RSA 2048 private key, as PKCS#8 PEM text.
    static func newKey() throws -> String {
        let path = "/tmp/rca-key-\(UUID().uuidString.prefix(8)).pem"
        defer { unlink(path) }
        try generateKey(at: path)
        return try String(contentsOfFile: path, encoding: .utf8)
    }

    /// A fresh RSA 2048 private key (PKCS#8 PEM) at `path`.
    static func generateKey(at path: String) throws {
        _ = try openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", path])
    }

    /// Runs the openssl command; its stdout, or an error naming the command and its stderr.
    static func openssl(_ arguments: [String]) throws -> String {
        let result = try runProcess("/usr/bin/openssl", arguments)
        guard result.status == 0 else {
            throw DaemonError("openssl \(arguments.joined(separator: " ")): \(result.stderr)")
        }
        return result.stdout
    }

    /// The admin state file (templates and their versions per namespace); empty before any seed or publish.
    var adminState: [String: Any] {
        guard let data = FileManager.default.contents(atPath: adminStatePath) else { return [:] }
        return (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
    }

    /// The current template of a namespace ("firebase" or "firebase-server") and its version
    /// number, or nil before any seed or publish.
    func adminTemplate(namespace: String = "firebase") -> (version: Int, template: [String: Any])? {
        guard let space = adminState[namespace] as? [String: Any], let current = space["current"] as? Int,
            let versions = space["versions"] as? [[String: Any]]
        else { return nil }
        for entry in versions where (entry["version"] as? [String: Any])?["versionNumber"] as? String == "\(current)" {
            return (current, entry["template"] as? [String: Any] ?? [:])
        }
        return nil
    }

    /// The version records of a namespace, oldest first (versionNumber, updateType, updateOrigin, ...).
    func adminVersions(namespace: String = "firebase") -> [[String: Any]] {
        let versions = (adminState[namespace] as? [String: Any])?["versions"] as? [[String: Any]] ?? []
        return versions.compactMap { $0["version"] as? [String: Any] }
    }

    /// Seeds the client template the admin state starts from (read once, when the state file is created).
    func seedAdminTemplate(_ template: [String: Any]) throws { try updateMode(["adminTemplate": template]) }

    /// Every FCM message accepted for delivery (not validate_only), oldest first: name, project,
    /// message, notes, time.
    var fcmMessages: [[String: Any]] { Self.jsonLines(fcmLogPath) }

    /// Injects failures: each entry {"api", "status", "retryAfter"?, "times"?} answers the next
    /// `times` calls to that API (see the script's docstring). Replaces the previous list.
    func setAdminFailures(_ failures: [[String: Any]]) throws { try updateMode(["adminFailures": failures]) }

    /// Every access token issued so far expires now (their next calls get 401).
    func expireAccessTokens() throws { try updateMode(["expireAccessTokens": UUID().uuidString]) }

    /// Someone else publishes `template` (into `namespace`, or the PUT's) just before the next
    /// Remote Config PUT is checked, so that PUT's If-Match is stale. Each call publishes once,
    /// even with the same template as the last call.
    func publishBeforeNextPut(_ template: [String: Any], namespace: String? = nil) throws {
        var value: [String: Any] = ["template": template, "id": UUID().uuidString]
        if let namespace { value["namespace"] = namespace }
        try updateMode(["publishBeforeNextPut": value])
    }
}
