internal import CCrypto
internal import CLazyLibraries

/// An Ed25519 public key read by libcrypto from PEM (`BEGIN PUBLIC KEY`, SubjectPublicKeyInfo, as
/// `openssl pkey -pubout` writes it), owned: read in `init`, freed in `deinit`.
public final class Ed25519PublicKey: @unchecked Sendable {
    // Immutable after init; libcrypto's verify with a key of its own is safe from several threads.
    private let key: OpaquePointer
    /// The 32 raw key bytes: two files with the same key are one key.
    public let raw: [UInt8]
    /// SHA-256 of the raw key, in hex: the `keyid` rcadmin writes, and how status names a key.
    public let keyID: String

    /// `name` says where the key came from, for errors.
    public init(pem: [UInt8], name: String) throws(SigningError) {
        try Libcrypto.require("reading \(name)")
        guard let read = Libcrypto.readKey(pem, .publicKey) else {
            throw SigningError(.key, "\(name): not a PEM public key (\(Libcrypto.lastError()))")
        }
        let key = try Libcrypto.requireEd25519(read, name)
        var raw = [UInt8](repeating: 0, count: 32)
        var length = 32
        guard EVP_PKEY_get_raw_public_key(key, &raw, &length) == 1, length == 32 else {
            EVP_PKEY_free(key)
            throw SigningError(.key, "\(name): cannot read the key's bytes (\(Libcrypto.lastError()))")
        }
        self.key = key
        self.raw = raw
        keyID = Libcrypto.hex(Libcrypto.sha256(raw))
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// Whether `signature` is this key's Ed25519 signature of `message` (one-shot: Ed25519 hashes the
    /// message twice and cannot stream). A signature of the wrong length costs nothing.
    public func verifies(_ signature: [UInt8], of message: [UInt8]) -> Bool {
        guard signature.count == 64, let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, nil, nil, key) == 1 else {
            ERR_clear_error()
            return false
        }
        let status = EVP_DigestVerify(context, signature, signature.count, message, message.count)
        if status != 1 { ERR_clear_error() }
        return status == 1
    }

    /// The key as PEM text.
    public var pem: String {
        let bytes = Libcrypto.writtenText { PEM_write_bio_PUBKEY($0, key) } ?? []
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The PEM blocks of `text` that are public keys, each with its line (for errors). Text outside
    /// them (comments, blank lines) is ignored, as openssl does.
    public static func pemBlocks(_ text: [UInt8]) -> [(block: [UInt8], line: Int)] {
        let begin = Array("-----BEGIN PUBLIC KEY-----".utf8)
        let end = Array("-----END PUBLIC KEY-----".utf8)
        var blocks: [(block: [UInt8], line: Int)] = []
        var line = 1
        var start: (index: Int, line: Int)?
        var index = 0
        while index < text.count {
            if text[index...].starts(with: begin) {
                start = (index, line)
            } else if let open = start, text[index...].starts(with: end) {
                blocks.append((Array(text[open.index..<(index + end.count)]) + [10], open.line))
                start = nil
                index += end.count
                continue
            }
            if text[index] == 10 { line += 1 }
            index += 1
        }
        return blocks
    }
}
