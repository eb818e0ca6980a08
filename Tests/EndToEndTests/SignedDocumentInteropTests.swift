import Foundation
import Glibc
import TestSupport
import Testing

/// Signed documents against another DSSE signer and verifier, the openssl CLI (Ed25519 over DSSE's
/// PAE, built by Tests/Fixtures/dsse_sign.py), both ways; and rcadmin's key, sign and verify.
@Suite struct SignedDocumentInteropTests {
    static let signer = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/dsse_sign.py").path

    static func openssl(_ sandbox: Sandbox, _ arguments: [String]) throws -> ProcessResult {
        try sandbox.run("/usr/bin/openssl", arguments)
    }

    @Test func anEnvelopeTheOpensslCLISignedIsAcceptedByTheDaemon() throws {
        let sandbox = try Sandbox()
        let key = sandbox.root.appendingPathComponent("openssl.key").path
        let pub = sandbox.root.appendingPathComponent("openssl.pub").path
        #expect(try Self.openssl(sandbox, ["genpkey", "-algorithm", "ed25519", "-out", key]).status == 0)
        #expect(try Self.openssl(sandbox, ["pkey", "-in", key, "-pubout", "-out", pub]).status == 0)
        try sandbox.writeConfig(extra: "TrustedKeys=\(pub)\n")
        let document = sandbox.root.appendingPathComponent("doc.json").path
        try Sandbox.document(version: 4).write(toFile: document, atomically: true, encoding: .utf8)
        let expires = ISO8601DateFormatter().string(from: Date().addingTimeInterval(3_600))
        // URL-safe base64 without padding and a keyid of the signer's own: both are DSSE.
        let envelope = try sandbox.run(
            "/usr/bin/python3",
            [
                Self.signer, "--key", key, "--version", "4", "--expires", expires, "--url-safe", "--keyid", "ci-2026",
                document,
            ])
        #expect(envelope.status == 0, "\(envelope.stderr)")
        try sandbox.publish(envelope.stdout)
        let daemon = try sandbox.startDaemon()
        let fetch = try sandbox.cli("fetch", "--force", "--wait")
        #expect(fetch.status == 0, "\(fetch.stderr)\(daemon.log)")
        #expect(try sandbox.cli("get", "key_0").stdout == "v4\n")
        // rcadmin verify says the same of it.
        let file = sandbox.root.appendingPathComponent("envelope.json").path
        try envelope.stdout.write(toFile: file, atomically: true, encoding: .utf8)
        let verify = try sandbox.run("rcadmin", ["verify", "--key", pub, file])
        #expect(verify.status == 0, "\(verify.stderr)")
        #expect(verify.stdout.hasPrefix("OK: version 4, expires "))
        #expect(daemon.stop() == 0)
    }

    @Test func rcadminsSignatureVerifiesWithTheOpensslCLI() throws {
        let sandbox = try Sandbox()
        let key = sandbox.root.appendingPathComponent("rcadmin.key").path
        #expect(try sandbox.run("rcadmin", ["key", "generate", "--out", key]).status == 0)
        let document = sandbox.root.appendingPathComponent("doc.json").path
        try Sandbox.document(version: 8).write(toFile: document, atomically: true, encoding: .utf8)
        let signed = try sandbox.run("rcadmin", ["sign", "--key", key, "--version", "8", "--expires", "2d", document])
        #expect(signed.status == 0, "\(signed.stderr)")
        let envelope = try #require(try JSONSerialization.jsonObject(with: Data(signed.stdout.utf8)) as? [String: Any])
        let type = try #require(envelope["payloadType"] as? String)
        #expect(type == "application/vnd.rcagent.config+json")
        let payloadText = try #require(envelope["payload"] as? String)
        let payload = try #require(Data(base64Encoded: payloadText))
        let signatures = try #require(envelope["signatures"] as? [[String: Any]])
        let signatureText = try #require(signatures.first?["sig"] as? String)
        let signature = try #require(Data(base64Encoded: signatureText))
        #expect(signature.count == 64)
        // DSSE's PAE, written out here independently of the code under test.
        var pae = Data("DSSEv1 \(type.utf8.count) \(type) \(payload.count) ".utf8)
        pae.append(payload)
        let paePath = sandbox.root.appendingPathComponent("pae.bin")
        let sigPath = sandbox.root.appendingPathComponent("sig.bin")
        try pae.write(to: paePath)
        try signature.write(to: sigPath)
        let verified = try Self.openssl(
            sandbox,
            [
                "pkeyutl", "-verify", "-pubin", "-inkey", key + ".pub", "-rawin", "-in", paePath.path, "-sigfile",
                sigPath.path,
            ])
        #expect(verified.status == 0, "\(verified.stdout)\(verified.stderr)")
        #expect(verified.stdout.contains("Signature Verified Successfully"))
        // And a flipped payload byte does not verify (the check above can fail).
        pae[pae.count - 2] ^= 1
        try pae.write(to: paePath)
        #expect(
            try Self.openssl(
                sandbox,
                [
                    "pkeyutl", "-verify", "-pubin", "-inkey", key + ".pub", "-rawin", "-in", paePath.path, "-sigfile",
                    sigPath.path,
                ]
            ).status != 0)
        // The payload is the one documented: version, expires, document.
        let inner = try #require(try JSONSerialization.jsonObject(with: payload) as? [String: Any])
        #expect(inner["version"] as? Int == 8)
        #expect(inner["expires"] is String)
        #expect((inner["document"] as? [String: Any])?["templateVersion"] as? String == "8")
    }

    @Test func keyGenerateWritesAPrivateAndAPublicKeyAndNeverOverwrites() throws {
        let sandbox = try Sandbox()
        let key = sandbox.root.appendingPathComponent("k").path
        #expect(try sandbox.run("rcadmin", ["key", "generate", "--out", key]).status == 0)
        var info = stat()
        #expect(stat(key, &info) == 0 && info.st_mode & 0o777 == 0o600)
        #expect(stat(key + ".pub", &info) == 0 && info.st_mode & 0o777 == 0o644)
        let before = try Data(contentsOf: URL(fileURLWithPath: key))
        let again = try sandbox.run("rcadmin", ["key", "generate", "--out", key])
        #expect(again.status == 1)
        #expect(again.stderr.contains("exists; key generate never writes over a file"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: key)) == before)
        // A public key file in the way stops it too, and no half pair is left.
        let other = sandbox.root.appendingPathComponent("other").path
        try "x".write(toFile: other + ".pub", atomically: true, encoding: .utf8)
        #expect(try sandbox.run("rcadmin", ["key", "generate", "--out", other]).status == 1)
        #expect(!FileManager.default.fileExists(atPath: other))
        // openssl reads both halves.
        #expect(try Self.openssl(sandbox, ["pkey", "-in", key, "-noout"]).status == 0)
        #expect(try Self.openssl(sandbox, ["pkey", "-pubin", "-in", key + ".pub", "-noout"]).status == 0)
    }

    @Test func signRefusesWhatTheAgentWouldRefuse() throws {
        let sandbox = try Sandbox()
        let key = sandbox.root.appendingPathComponent("k").path
        #expect(try sandbox.run("rcadmin", ["key", "generate", "--out", key]).status == 0)
        func sign(_ document: String, _ extra: [String] = []) throws -> ProcessResult {
            let path = sandbox.root.appendingPathComponent("doc-\(UUID().uuidString.prefix(6)).json").path
            try document.write(toFile: path, atomically: true, encoding: .utf8)
            return try sandbox.run("rcadmin", ["sign", "--key", key, "--version", "1"] + extra + [path])
        }
        let nul = try sign(#"{"entries": {"a": "x\u0000y"}, "state": "UPDATE"}"#)
        #expect(nul.status == 1 && nul.stderr.contains("may not contain NUL"), "\(nul.stderr)")
        let deep = try sign(String(repeating: "[", count: 200) + String(repeating: "]", count: 200))
        #expect(deep.status == 1 && deep.stderr.contains("nesting deeper than"), "\(deep.stderr)")
        let shape = try sign(#"{"state": "BOGUS"}"#)
        #expect(shape.status == 1, "\(shape.stderr)")
        let past = try sign(Sandbox.document(version: 1), ["--expires", "2001-01-01T00:00:00Z"])
        #expect(past.status == 64 && past.stderr.contains("has passed"))
        let ok = try sign(Sandbox.document(version: 1))
        #expect(ok.status == 0 && ok.stdout.hasPrefix("{\"payload\":"), "\(ok.stderr)")
        // verify with another key says what the agent would say, exit 1.
        let other = sandbox.root.appendingPathComponent("other").path
        #expect(try sandbox.run("rcadmin", ["key", "generate", "--out", other]).status == 0)
        let envelope = sandbox.root.appendingPathComponent("envelope.json").path
        try ok.stdout.write(toFile: envelope, atomically: true, encoding: .utf8)
        let wrong = try sandbox.run("rcadmin", ["verify", "--key", other + ".pub", envelope])
        #expect(wrong.status == 1 && wrong.stderr.contains("signature: 0 of the 1 trusted key(s)"), "\(wrong.stderr)")
        #expect(try sandbox.run("rcadmin", ["verify", "--key", key + ".pub", envelope]).status == 0)
    }
}
