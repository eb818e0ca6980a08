import Foundation
import Glibc
import TestSupport
import Testing

/// Signed documents (issue 28) through the built binaries: `rcadmin key generate` and `sign` make
/// what the daemon fetches from the file and http sources with `TrustedKeys=`; a plain, older,
/// re-used-version or expired document is a failed fetch naming why, and the last good values stay.
@Suite struct SecuritySignedDocumentTests {
    /// A sandbox whose file source requires documents signed by a key `rcadmin key generate` made.
    final class Signed {
        let sandbox: Sandbox
        let key: String
        var publicKey: String { key + ".pub" }

        init(http server: ((Sandbox) throws -> ConfigServer)? = nil, extra: String = "") throws {
            sandbox = try Sandbox()
            key = sandbox.root.appendingPathComponent("signing.key").path
            let made = try sandbox.run("rcadmin", ["key", "generate", "--out", key])
            guard made.status == 0 else { throw DaemonError("key generate: \(made.stderr)") }
            try sandbox.writeConfig(extra: "TrustedKeys=\(publicKey)\n\(extra)")
        }

        /// `rcadmin sign`'s envelope of template `version` (``Sandbox/document(version:keys:extra:)``).
        func envelope(version: Int, document: String? = nil, expires: String? = nil, keys: [String]? = nil) throws
            -> String
        {
            let path = sandbox.root.appendingPathComponent("unsigned-\(UUID().uuidString.prefix(6)).json").path
            try (document ?? Sandbox.document(version: version)).write(toFile: path, atomically: true, encoding: .utf8)
            let signed = try sandbox.run(
                "rcadmin",
                ["sign", "--key", (keys ?? [key]).joined(separator: ","), "--version", "\(version)"]
                    + (expires.map { ["--expires", $0] } ?? []) + [path])
            guard signed.status == 0 else { throw DaemonError("rcadmin sign: \(signed.stderr)") }
            return signed.stdout
        }

        func fetch() throws -> ProcessResult { try sandbox.cli("fetch", "--force", "--wait") }
        func value() throws -> String { try sandbox.cli("get", "key_0").stdout }
    }

    @Test func theFileSourceTakesSignedDocumentsOnlyAndNeverAnOlderOne() throws {
        let signed = try Signed()
        let sandbox = signed.sandbox
        try sandbox.publish(try signed.envelope(version: 2))
        let daemon = try sandbox.startDaemon()
        let first = try signed.fetch()
        #expect(first.status == 0, "\(first.stderr)\(daemon.log)")
        #expect(try signed.value() == "v2\n")
        #expect(daemon.log.contains("Accepted signed version 2"))

        // A plain document while TrustedKeys= is set: refused, the signed values keep serving.
        try sandbox.publish(Sandbox.document(version: 3))
        let plain = try signed.fetch()
        #expect(plain.status != 0)
        #expect(plain.stderr.contains("signature: not a DSSE envelope"), "\(plain.stderr)")
        #expect(try signed.value() == "v2\n")

        // An older signed document (a replay): refused as a rollback.
        try sandbox.publish(try signed.envelope(version: 1))
        let older = try signed.fetch()
        #expect(older.stderr.contains("rollback: version 1 is lower than version 2"), "\(older.stderr)")
        // Another document under the accepted version: refused too.
        try sandbox.publish(try signed.envelope(version: 2, document: Sandbox.document(version: 99)))
        let reused = try signed.fetch()
        #expect(reused.stderr.contains("rollback: version 2 was accepted already with another document"))
        #expect(try signed.value() == "v2\n")
        let status = try sandbox.cli("status").stdout
        #expect(status.contains("signature:    version 2, expires "), "\(status)")
        #expect(status.contains("rollback"), "the refusal is the last error: \(status)")
        // The JSON member: required, the accepted version, and the key that signed it (the
        // envelope's keyid, which rcadmin writes as the key's id).
        let json = try JSONSerialization.jsonObject(with: Data(try sandbox.cli("status", "--json").stdout.utf8))
        let signature = try #require((json as? [String: Any])?["signature"] as? [String: Any])
        #expect(signature["required"] as? Bool == true && signature["version"] as? Int == 2)
        #expect(signature["expires"] is String)
        let envelope = try JSONSerialization.jsonObject(with: Data(try signed.envelope(version: 3).utf8))
        let keyID = ((envelope as? [String: Any])?["signatures"] as? [[String: Any]])?.first?["keyid"] as? String
        #expect(signature["keyIds"] as? [String] == [try #require(keyID)], "\(signature)")
        #expect(daemon.stop() == 0)
    }

    @Test func theLastAcceptedVersionSurvivesARestartAndDatabaseRecovery() throws {
        let signed = try Signed()
        let sandbox = signed.sandbox
        try sandbox.publish(try signed.envelope(version: 5))
        var daemon = try sandbox.startDaemon()
        #expect(try signed.fetch().status == 0)
        #expect(daemon.stop() == 0)
        // The database is corrupt: the daemon moves it aside and starts from the defaults.
        try Data(repeating: 0x41, count: 8_192).write(to: URL(fileURLWithPath: sandbox.databasePath))
        try? FileManager.default.removeItem(atPath: sandbox.databasePath + "-wal")
        try sandbox.publish(try signed.envelope(version: 4))
        daemon = try sandbox.startDaemon()
        let replay = try signed.fetch()
        #expect(replay.status != 0)
        #expect(replay.stderr.contains("rollback: version 4 is lower than version 5"), "\(replay.stderr)\(daemon.log)")
        #expect(try sandbox.cli("status").stdout.contains("recovered:"))
        try sandbox.publish(try signed.envelope(version: 6))
        #expect(try signed.fetch().status == 0)
        #expect(try signed.value() == "v6\n")
        #expect(daemon.stop() == 0)
    }

    @Test func anHTTPServerSwappingInAnOlderSignedDocumentIsRefused() throws {
        let signed = try Signed()
        let sandbox = signed.sandbox
        let server = try ConfigServer(in: sandbox)
        try sandbox.writeConfig(extra: "Type=http\nURL=\(server.url)\nTrustedKeys=\(signed.publicKey)\n")
        let v3 = try signed.envelope(version: 3)
        let v2 = try signed.envelope(version: 2)
        try server.serve(v3, etag: "\"v3\"")
        let daemon = try sandbox.startDaemon()
        #expect(try signed.fetch().status == 0)
        #expect(try signed.value() == "v3\n")
        try server.serve(v2, etag: "\"v2\"")
        let swapped = try signed.fetch()
        #expect(swapped.status != 0)
        #expect(swapped.stderr.contains("rollback: version 2 is lower than version 3"), "\(swapped.stderr)")
        #expect(try signed.value() == "v3\n")
        // The server comes back with the current one: a 304 or the same document is fine.
        try server.serve(v3, etag: "\"v3\"")
        #expect(try signed.fetch().status == 0)
        #expect(daemon.stop() == 0)
    }

    @Test func anHTTPServerThatKeepsServingAnExpiredDocumentIsRefused() throws {
        let signed = try Signed()
        let sandbox = signed.sandbox
        let server = try ConfigServer(in: sandbox)
        try sandbox.writeConfig(extra: "Type=http\nURL=\(server.url)\nTrustedKeys=\(signed.publicKey)\n")
        // Valid for three seconds, then the server keeps serving it (with its ETag: 304s).
        try server.serve(try signed.envelope(version: 1, expires: "3s"), etag: "\"v1\"")
        let daemon = try sandbox.startDaemon()
        #expect(try signed.fetch().status == 0)
        var refusal = ""
        #expect(
            try eventually(20) {
                let fetch = try signed.fetch()
                refusal = fetch.stderr
                return fetch.status != 0
            })
        #expect(refusal.contains("expired: version 1 expired at"), "\(refusal)\(daemon.log)")
        #expect(try signed.value() == "v1\n", "the last good values keep serving")
        #expect(try sandbox.cli("status").stdout.contains("EXPIRED"))
        let doctor = try sandbox.cli("doctor")
        #expect(doctor.stdout.contains("FAIL  signatures"), "\(doctor.stdout)")
        // Signed anew (same version, same document, later expiry): accepted again.
        try server.serve(try signed.envelope(version: 1, expires: "1h"), etag: "\"v1b\"")
        #expect(try signed.fetch().status == 0)
        #expect(daemon.stop() == 0)
    }

    @Test func aThresholdNeedsDistinctKeysAndRotationAddsBeforeItRemoves() throws {
        let signed = try Signed()
        let sandbox = signed.sandbox
        let keys = sandbox.root.appendingPathComponent("trusted.d")
        try FileManager.default.createDirectory(at: keys, withIntermediateDirectories: true)
        let second = sandbox.root.appendingPathComponent("second.key").path
        #expect(try sandbox.run("rcadmin", ["key", "generate", "--out", second]).status == 0)
        try FileManager.default.copyItem(atPath: signed.publicKey, toPath: keys.appendingPathComponent("old.pem").path)
        try sandbox.writeConfig(extra: "TrustedKeys=\(keys.path)\nSignatureThreshold=2\n")
        try sandbox.publish(try signed.envelope(version: 1))
        let daemon = try sandbox.startDaemon()
        // Two required, one key trusted: nothing is accepted, and the log says why.
        let tooFew = try signed.fetch()
        #expect(tooFew.stderr.contains("SignatureThreshold=2 but"), "\(tooFew.stderr)")
        // Rotation, step one: the new key is added (reload), and both sign.
        try FileManager.default.copyItem(atPath: second + ".pub", toPath: keys.appendingPathComponent("new.pem").path)
        #expect(try sandbox.cli("reload").status == 0)
        // One key signing twice is one key. (rcadmin would write its key id twice, which the envelope
        // reader refuses before any signature is checked; the openssl signer writes no key id.)
        let document = sandbox.root.appendingPathComponent("v2.json").path
        try Sandbox.document(version: 2).write(toFile: document, atomically: true, encoding: .utf8)
        let twice = try sandbox.run(
            "/usr/bin/python3",
            [
                SignedDocumentInteropTests.signer, "--key", signed.key, "--key", signed.key, "--version", "2",
                "--expires", ISO8601DateFormatter().string(from: Date().addingTimeInterval(3_600)), document,
            ])
        try sandbox.publish(twice.stdout)
        let oneKeyTwice = try signed.fetch()
        #expect(oneKeyTwice.stderr.contains("1 of the 2 trusted key(s) required signed it"), "\(oneKeyTwice.stderr)")
        try sandbox.publish(try signed.envelope(version: 2, keys: [signed.key, second]))
        #expect(try signed.fetch().status == 0)
        // Step two: the old key is removed and the threshold lowered; its signature alone no longer counts.
        try FileManager.default.removeItem(at: keys.appendingPathComponent("old.pem"))
        try sandbox.writeConfig(extra: "TrustedKeys=\(keys.path)\nSignatureThreshold=1\n")
        #expect(try sandbox.cli("reload").status == 0)
        try sandbox.publish(try signed.envelope(version: 3, keys: [signed.key]))
        #expect(try signed.fetch().stderr.contains("0 of the 1 trusted key(s) required signed it"))
        try sandbox.publish(try signed.envelope(version: 3, keys: [second]))
        #expect(try signed.fetch().status == 0)
        #expect(try signed.value() == "v3\n")
        #expect(daemon.stop() == 0)
    }

    @Test func aKeyFileOthersCanWriteIsRefused() throws {
        let signed = try Signed()
        let sandbox = signed.sandbox
        chmod(signed.publicKey, 0o666)
        try sandbox.publish(try signed.envelope(version: 1))
        let daemon = try sandbox.startDaemon()
        let fetch = try signed.fetch()
        #expect(fetch.stderr.contains("can be written by every user"), "\(fetch.stderr)")
        #expect(daemon.log.contains("Failed to read TrustedKeys="))
        #expect(try sandbox.cli("doctor").stdout.contains("FAIL  signatures"))
        #expect(daemon.stop() == 0)
    }
}
