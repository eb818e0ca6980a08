internal import CCrypto
internal import CLazyLibraries

/// What every owner of a libcrypto object shares (here, and RCGoogle's RSA key): loading the library (on first use, so that
/// `rcagent`, which never verifies anything, never maps it), handing it bytes, and its reasons.
package enum Libcrypto {
    /// Loads libcrypto, or throws why it cannot be loaded, naming `feature`.
    static func require(_ feature: String) throws(SigningError) {
        if let problem = rc_lazy_require(RC_LAZY_CRYPTO) {
            throw SigningError(.key, "\(feature) needs \(String(cString: problem))")
        }
    }

    /// libcrypto's reason for the last failure, its error queue emptied so nothing is left for the
    /// next caller to misread.
    package static func lastError() -> String {
        let code = ERR_peek_last_error()
        defer { ERR_clear_error() }
        guard code != 0, let reason = ERR_reason_error_string(code) else { return "libcrypto gave no reason" }
        return String(cString: reason)
    }

    /// Runs `body` with a read-only memory BIO over a copy of `bytes` (wiped after: it may be a
    /// private key), or `nil` when libcrypto cannot make one.
    package static func withReadBIO<T>(_ bytes: [UInt8], _ body: (OpaquePointer) -> T) -> T? {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 1)
        buffer.copyBytes(from: bytes)
        defer {
            OPENSSL_cleanse(buffer.baseAddress, buffer.count)
            buffer.deallocate()
        }
        guard bytes.count < Int(Int32.max), let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(bytes.count)) else {
            return nil
        }
        defer { BIO_free(bio) }
        return body(bio)
    }

    /// Which PEM block a key is read from.
    package enum PEMKind { case privateKey, publicKey }

    /// The key in `pem`, or `nil` when it holds none of `kind` (``lastError()`` says why). Never
    /// prompts: libcrypto would otherwise ask on the terminal for an encrypted key's passphrase.
    package static func readKey(_ pem: [UInt8], _ kind: PEMKind) -> OpaquePointer? {
        let noPassphrase:
            @convention(c) (UnsafeMutablePointer<CChar>?, Int32, Int32, UnsafeMutableRawPointer?) -> Int32 = {
                _, _, _, _ in 0
            }
        let read = withReadBIO(pem) { bio in
            switch kind {
            case .privateKey: PEM_read_bio_PrivateKey(bio, nil, noPassphrase, nil)
            case .publicKey: PEM_read_bio_PUBKEY(bio, nil, noPassphrase, nil)
            }
        }
        return read ?? nil
    }

    /// `key` if it is an Ed25519 key; else it is freed and the error names `name`.
    static func requireEd25519(_ key: OpaquePointer, _ name: String) throws(SigningError) -> OpaquePointer {
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_ED25519 else {
            EVP_PKEY_free(key)
            throw SigningError(.key, "\(name): not an Ed25519 key (signed documents use Ed25519)")
        }
        return key
    }

    /// What `write` puts into a memory BIO, or `nil` when it fails.
    static func writtenText(_ write: (OpaquePointer) -> Int32) -> [UInt8]? {
        guard let bio = BIO_new(BIO_s_mem()) else { return nil }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { return nil }
        var data: UnsafeMutablePointer<CChar>?
        let length = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &data)  // BIO_get_mem_data, a macro
        guard length > 0, let data else { return nil }
        let bytes = UnsafeRawBufferPointer(start: data, count: length)
        defer { OPENSSL_cleanse(data, length) }
        return Array(bytes)
    }

    /// SHA-256 of `bytes` (libcrypto loaded by the caller).
    static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        _ = bytes.withUnsafeBytes { input in
            digest.withUnsafeMutableBufferPointer { output in
                EVP_Digest(input.baseAddress, input.count, output.baseAddress, &length, EVP_sha256(), nil)
            }
        }
        return digest
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xf)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// The SHA-256 of a signed document, in hex: the same version must carry the same document.
public enum DocumentDigest {
    public static func of(_ document: [UInt8]) throws(SigningError) -> String {
        try Libcrypto.require("checking a signed document")
        return Libcrypto.hex(Libcrypto.sha256(document))
    }
}
