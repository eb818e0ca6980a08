internal import CCrypto
internal import CLazyLibraries

/// An Ed25519 private key, owned: made or read in `init`, freed in `deinit` (libcrypto clears the
/// secret as it frees it). `rcadmin key generate` makes one, `rcadmin sign` signs with it.
public final class Ed25519PrivateKey {
    private let key: OpaquePointer

    /// A new key from libcrypto's random generator.
    public init() throws(SigningError) {
        try Libcrypto.require("making a key")
        guard let context = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nil) else {
            throw SigningError(.key, "cannot make a key: \(Libcrypto.lastError())")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var made: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_keygen(context, &made) == 1, let made else {
            throw SigningError(.key, "cannot make a key: \(Libcrypto.lastError())")
        }
        key = made
    }

    /// A key from PEM (`BEGIN PRIVATE KEY`, PKCS#8, as `openssl genpkey -algorithm ed25519` writes it).
    public init(pem: [UInt8], name: String) throws(SigningError) {
        try Libcrypto.require("reading \(name)")
        guard let key = Libcrypto.readKey(pem, .privateKey) else {
            throw SigningError(.key, "\(name): not an unencrypted PEM private key (\(Libcrypto.lastError()))")
        }
        self.key = try Libcrypto.requireEd25519(key, name)
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// The Ed25519 signature (64 bytes) of `message`.
    public func sign(_ message: [UInt8]) throws(SigningError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw SigningError(.key, "cannot sign: out of memory") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, nil, nil, key) == 1 else {
            throw SigningError(.key, "cannot sign: \(Libcrypto.lastError())")
        }
        var signature = [UInt8](repeating: 0, count: 64)
        var length = signature.count
        guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1, length == 64 else {
            throw SigningError(.key, "cannot sign: \(Libcrypto.lastError())")
        }
        return signature
    }

    /// The private key as unencrypted PKCS#8 PEM (for a 0600 file).
    public func privatePEM() throws(SigningError) -> [UInt8] {
        guard let bytes = Libcrypto.writtenText({ PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) }) else {
            throw SigningError(.key, "cannot write the private key: \(Libcrypto.lastError())")
        }
        return bytes
    }

    /// The public half, as PEM.
    public func publicPEM() throws(SigningError) -> [UInt8] {
        guard let bytes = Libcrypto.writtenText({ PEM_write_bio_PUBKEY($0, key) }) else {
            throw SigningError(.key, "cannot write the public key: \(Libcrypto.lastError())")
        }
        return bytes
    }

    /// The public half as a key that verifies.
    public func publicKey() throws(SigningError) -> Ed25519PublicKey {
        try Ed25519PublicKey(pem: try publicPEM(), name: "the public key")
    }
}
