import RCCore
import RCService
import RCSigning
import RCSystem
import RCTemplate

/// `rcadmin sign` and `rcadmin verify`: signed documents for the file and http sources (issue 28),
/// made and checked with the very code the agent verifies them with.
enum SignCommands {
    /// How long a signature lasts without `--expires`.
    static let defaultLifetime: Duration = .seconds(30 * 86_400)
    /// The largest envelope a source hands over (the file source's limit; an http source's is its
    /// `MaxResponseSize=`, 4 MiB unless set).
    static let maximumEnvelope = 16 << 20

    static let sign = AdminCommand(
        words: ["sign"], synopsis: "--key FILE[,FILE...] --version N [--expires DURATION|ISO8601] DOC",
        help: """
            Prints the DSSE envelope of DOC (a fetch response or a template, as the file and http
            sources read them) for devices with TrustedKeys=: payload type
            application/vnd.rcagent.config+json, payload {"version": N, "expires": T, "document": DOC},
            one Ed25519 signature per private key given (comma-separated, for SignatureThreshold= above 1).
            --version must grow with every document (devices refuse a lower one, and another document
            under a version they accepted); --expires is a duration from now (default 30d) or an ISO 8601
            time, after which devices refuse the document. DOC is refused as the agent would refuse it.
            """,
        options: [.value("key", "FILE"), .value("version", "N"), .value("expires", "WHEN")], arguments: 1...1
    ) { options, _ throws(AdminFailure) in
        guard let keyList = options.value("key") else { throw .usage("sign needs --key FILE") }
        guard let version = try options.integer("version", in: 1...SignedPayload.maximumVersion) else {
            throw .usage("sign needs --version N")
        }
        let now = Timestamp.now()
        let expires = try expiry(options.value("expires"), now: now)
        let path = options.positionals[0]
        let bytes = try read(path, what: "document")
        let document = try checkedDocument(bytes, name: path)
        var keys: [Ed25519PrivateKey] = []
        for keyPath in keyList.split(separator: ",").map(String.init) {
            let pem = try read(keyPath, what: "private key")
            do throws(SigningError) { keys.append(try Ed25519PrivateKey(pem: pem, name: keyPath)) } catch {
                throw .failure(TextEscaping.terminal(error.reason))
            }
        }
        let payload = SignedPayload(version: version, expires: expires, document: document).bytes
        let pae = DSSEEnvelope.pae(type: DSSEEnvelope.configPayloadType, body: payload)
        var signatures: [DSSEEnvelope.Signature] = []
        do throws(SigningError) {
            for key in keys { signatures.append(.init(keyID: try key.publicKey().keyID, bytes: try key.sign(pae))) }
        } catch { throw .failure(error.description) }
        let envelope = DSSEEnvelope(payload: payload, signatures: signatures).json.compactText + "\n"
        guard envelope.utf8.count <= maximumEnvelope else {
            throw .failure("the envelope is \(envelope.utf8.count) bytes; no source reads more than \(maximumEnvelope)")
        }
        if envelope.utf8.count > AgentConfig().maxResponseSize {
            Output.note(
                "Warning: the envelope is \(envelope.utf8.count) bytes; http sources refuse more than "
                    + "MaxResponseSize= (\(AgentConfig().maxResponseSize) unless set)")
        }
        Output.data(envelope)
    }

    static let verify = AdminCommand(
        words: ["verify"], synopsis: "--key PUB[,PUB...] [--threshold N] [--state FILE] FILE",
        help: """
            Says what a device would say of the signed document FILE: the envelope, the signatures of
            distinct trusted keys (PUB: a PEM public key file or a directory of them, as TrustedKeys=;
            several comma-separated), at least --threshold of them (default 1), the expiry and, with
            --state (a device's signed-version.json), the version rule. Exit 0 and a summary when a
            device would accept it; exit 1 and why (signature, rollback, expired) when it would not.
            """,
        options: [.value("key", "PUB"), .value("threshold", "N"), .value("state", "FILE"), .flag("json")],
        arguments: 1...1
    ) { options, _ throws(AdminFailure) in
        guard let keyList = options.value("key") else { throw .usage("verify needs --key PUB") }
        let threshold = Int(try options.integer("threshold", in: 1...32) ?? 1)
        var keys: [Ed25519PublicKey] = []
        for keyPath in keyList.split(separator: ",").map(String.init) {
            do throws(SigningError) { keys += try TrustedKeys.load(keyPath).keys } catch {
                throw .failure(TextEscaping.terminal(error.reason))
            }
        }
        let trusted = TrustedKeys(keys: keys, path: keyList)
        var last: SignedVersionRecord?
        if let state = options.value("state") {
            do throws(DocumentError) { last = try SignedVersionRecord.load(state) } catch {
                throw .failure(TextEscaping.terminal(error.description))
            }
        }
        let path = options.positionals[0]
        let bytes = try read(path, what: "signed document")
        let verified: VerifiedDocument
        do throws(SigningError) {
            verified = try SignedDocumentCheck.verify(
                bytes, keys: trusted, threshold: threshold, last: last, now: .now(), payloadLimit: maximumEnvelope)
        } catch { throw .failure("\(TextEscaping.terminal(path)): \(TextEscaping.terminal(error.description))") }
        _ = try checkedDocument(Array(verified.payload.document.compactText.utf8), name: path)
        let payload = verified.payload
        if options.flag("json") {
            Output.json(
                .object([
                    ("version", .integer(payload.version)), ("expires", .string(payload.expires.iso8601)),
                    ("signers", .array(verified.signers.map { .string($0) })),
                    ("documentDigest", .string(verified.documentDigest)),
                ]))
        } else {
            Output.data(
                "OK: version \(payload.version), expires \(payload.expires.iso8601), signed by "
                    + "\(verified.signers.count) trusted key(s) (threshold \(threshold)): "
                    + verified.signers.joined(separator: ", ") + "\n")
        }
    }

    /// `--expires`: a duration from `now` or an ISO 8601 time, in the future.
    static func expiry(_ text: String?, now: Timestamp) throws(AdminFailure) -> Timestamp {
        guard let text else { return now + defaultLifetime }
        let expires: Timestamp
        if let duration = DurationText.parse(text), duration > .zero {
            expires = now + duration
        } else if let time = Timestamp(iso8601: text) {
            expires = time
        } else {
            throw .usage(
                "--expires must be a duration (30d, 12h) or an ISO 8601 time, got '\(TextEscaping.terminal(text))'")
        }
        guard expires > now else {
            throw .usage("--expires \(TextEscaping.terminal(text)) has passed: devices would refuse the document")
        }
        return expires
    }

    /// The document as the agent reads it: the fetch-response or template shape, values without NUL,
    /// templates evaluated (for a device with no signals); refused with the agent's words.
    static func checkedDocument(_ bytes: [UInt8], name: String) throws(AdminFailure) -> JSONValue {
        let json: JSONValue
        do throws(JSONParseError) { json = try JSONValue.parse(bytes) } catch {
            throw .failure("\(TextEscaping.terminal(name)): \(error.description)")
        }
        guard case .object = json else {
            throw .failure("\(TextEscaping.terminal(name)): a \(json.typeName), not a document object")
        }
        if json["payloadType"] != nil && json["signatures"] != nil {
            throw .failure("\(TextEscaping.terminal(name)): already a signed envelope")
        }
        let reader = DocumentReader(deviceId: "rcadmin-sign-check", signals: [], log: Logger { _ in })
        do throws(DocumentError) { _ = try reader.read(bytes, name: name) } catch {
            throw .failure(TextEscaping.terminal(error.description))
        }
        return json
    }

    private static func read(_ path: String, what: String) throws(AdminFailure) -> [UInt8] {
        do {
            guard let bytes = try FileBytes.read(path, limit: maximumEnvelope) else {
                throw AdminFailure.failure("\(what) \(TextEscaping.terminal(path)): no such file")
            }
            return bytes
        } catch let error as AdminFailure {
            throw error
        } catch {
            throw .failure("\(what): \(TextEscaping.terminal("\(error)"))")
        }
    }
}
