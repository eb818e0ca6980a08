import Glibc
import RCCore
import RCService
import RCSigning
import RCTemplate
import Synchronization
import TestSupport
import Testing

@testable import RCAgent

/// The daemon's signed-document gate behind ``DocumentReader``: what it accepts, what it records,
/// and that the record outlives the gate (a restart, a reload) and the database.
@Suite struct SignatureGateTests {
    final class LogLines: Sendable {
        let lines = Mutex<[String]>([])
    }

    final class Device {
        let directory: TemporaryDirectory
        let key: Ed25519PrivateKey
        var config = AgentConfig()
        let lines = LogLines()

        init(_ directory: TemporaryDirectory, threshold: Int = 1) throws {
            self.directory = directory
            key = try Ed25519PrivateKey()
            let keys = try directory.write("trusted.pem", String(decoding: try key.publicPEM(), as: UTF8.self))
            config.stateDirectory = directory.path
            config.trustedKeys = keys
            config.signatureThreshold = threshold
        }

        /// A reader as Configuration builds one: a new gate, reading keys and the record afresh.
        func reader() -> DocumentReader {
            let sink = lines
            let log = Logger { line in sink.lines.withLock { $0.append(line) } }
            let gate = SignatureGate(config: config, keysPath: config.trustedKeys!, log: log)
            return DocumentReader(deviceId: "device", signals: [], log: log, opener: gate)
        }

        func envelope(version: Int64, banner: String = "hello", expires: Timestamp = .now() + .seconds(3_600))
            throws -> [UInt8]
        {
            let document = JSONValue.object([
                ("entries", .object([("banner", .string(banner))])), ("state", .string("UPDATE")),
            ])
            let payload = SignedPayload(version: version, expires: expires, document: document).bytes
            let signature = try key.sign(DSSEEnvelope.pae(type: DSSEEnvelope.configPayloadType, body: payload))
            let envelope = DSSEEnvelope(payload: payload, signatures: [.init(keyID: "", bytes: signature)])
            return Array(envelope.json.compactText.utf8)
        }
    }

    static func refusal(_ reader: DocumentReader, _ bytes: [UInt8]) -> String {
        do {
            _ = try reader.read(bytes, name: "remote.json")
            return "accepted"
        } catch { return error.description }
    }

    @Test func aSignedDocumentIsReadAndItsVersionRecorded() throws {
        try TemporaryDirectory.with { directory in
            let device = try Device(directory)
            let document = try device.reader().read(try device.envelope(version: 3), name: "remote.json")
            #expect(document == .update(values: ["banner": "hello"], templateVersion: nil))
            let record = try #require(try SignedVersionRecord.load(device.config.signedVersionPath))
            #expect(record.version == 3)
        }
    }

    @Test func plainDocumentsAreRefusedWhileKeysAreTrusted() throws {
        try TemporaryDirectory.with { directory in
            let device = try Device(directory)
            let refusal = Self.refusal(device.reader(), Array(#"{"entries":{"a":"b"},"state":"UPDATE"}"#.utf8))
            #expect(refusal.hasPrefix("remote.json: signature: not a DSSE envelope"))
        }
    }

    @Test func theLastAcceptedVersionOutlivesTheGateAndTheDatabase() throws {
        try TemporaryDirectory.with { directory in
            let device = try Device(directory)
            _ = try device.reader().read(try device.envelope(version: 5), name: "remote.json")
            // The database moved aside as corrupt (StateRecovery) does not touch the record.
            try directory.write("state.db", "garbage")
            rename(directory.file("state.db"), directory.file("state.db.corrupt-x"))
            let restarted = device.reader()
            #expect(
                Self.refusal(restarted, try device.envelope(version: 4))
                    == "remote.json: rollback: version 4 is lower than version 5, accepted already")
            #expect(
                Self.refusal(restarted, try device.envelope(version: 5, banner: "other"))
                    == "remote.json: rollback: version 5 was accepted already with another document")
            #expect(Self.refusal(restarted, try device.envelope(version: 5)) == "accepted")
            #expect(Self.refusal(restarted, try device.envelope(version: 6, banner: "new")) == "accepted")
            #expect(try SignedVersionRecord.load(device.config.signedVersionPath)?.version == 6)
        }
    }

    @Test func aSignedDocumentTheAgentCannotReadIsNotRecorded() throws {
        try TemporaryDirectory.with { directory in
            let device = try Device(directory)
            let payload = SignedPayload(
                version: 9, expires: .now() + .seconds(60), document: .object([("state", .string("BOGUS"))])
            ).bytes
            let signature = try device.key.sign(DSSEEnvelope.pae(type: DSSEEnvelope.configPayloadType, body: payload))
            let bytes = Array(
                DSSEEnvelope(payload: payload, signatures: [.init(keyID: "", bytes: signature)]).json.compactText.utf8)
            #expect(Self.refusal(device.reader(), bytes) != "accepted")
            #expect(try SignedVersionRecord.load(device.config.signedVersionPath) == nil)
        }
    }

    @Test func unusableKeysRefuseEveryDocument() throws {
        try TemporaryDirectory.with { directory in
            let device = try Device(directory)
            chmod(device.config.trustedKeys!, 0o666)
            #expect(
                Self.refusal(device.reader(), try device.envelope(version: 1)).contains("can be written by every user"))
            chmod(device.config.trustedKeys!, 0o644)
            device.config.signatureThreshold = 2
            #expect(
                Self.refusal(device.reader(), try device.envelope(version: 1)).contains(
                    "SignatureThreshold=2 but \(device.config.trustedKeys!) holds 1 distinct key(s)"))
            #expect(device.lines.lines.withLock { $0.contains { $0.contains("Failed to read TrustedKeys=") } })
        }
    }

    @Test func aDamagedRecordRefusesRatherThanForget() throws {
        try TemporaryDirectory.with { directory in
            let device = try Device(directory)
            try directory.write("signed-version.json", "{")
            #expect(
                Self.refusal(device.reader(), try device.envelope(version: 1)).contains(
                    "signature: cannot read the last accepted version"))
        }
    }

    @Test func theContextTagChangesOnceTheAcceptedDocumentExpires() throws {
        try TemporaryDirectory.with { directory in
            let device = try Device(directory)
            let reader = device.reader()
            _ = try reader.read(try device.envelope(version: 1, expires: .now() + .seconds(1)), name: "remote.json")
            let before = reader.contextTag
            #expect(!before.hasSuffix(":expired"))
            // The only wait in this suite: a signature that expires one second from now.
            #expect(eventually(5) { reader.contextTag.hasSuffix(":expired") })
        }
    }
}
