internal import CCrypto
internal import CLazyLibraries

/// An RSA private key read by libcrypto from PEM text, owned: read in `init`, freed in `deinit`
/// (libcrypto clears the private numbers as it frees them). It signs RS256: RSASSA-PKCS1-v1_5 over
/// SHA-256, libcrypto's default padding for RSA keys.
final class RSASigningKey {
    private let key: OpaquePointer

    /// `pem`: a PKCS#8 (`BEGIN PRIVATE KEY`) or PKCS#1 (`BEGIN RSA PRIVATE KEY`) key. Errors say what
    /// is wrong without quoting the key: `call` names where it came from.
    init(pem: String, call: String) throws(GoogleError) {
        if let problem = rc_lazy_require(RC_LAZY_CRYPTO) {
            throw GoogleError(call, "signing a service-account token needs \(String(cString: problem))")
        }
        // The PEM goes to libcrypto through a buffer of our own, wiped and freed as soon as the key is
        // read: a Swift string cannot be cleared, but this copy at least does not outlive the parse.
        let bytes = Array(pem.utf8)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 1)
        buffer.copyBytes(from: bytes)
        defer {
            OPENSSL_cleanse(buffer.baseAddress, buffer.count)
            buffer.deallocate()
        }
        guard bytes.count < Int(Int32.max), let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(bytes.count)) else {
            throw GoogleError(call, "cannot hand \"private_key\" to libcrypto")
        }
        defer { BIO_free(bio) }
        // A callback that gives no passphrase: without it, libcrypto would prompt on the terminal for
        // an encrypted key (Google's key files are never encrypted).
        let noPassphrase:
            @convention(c) (UnsafeMutablePointer<CChar>?, Int32, Int32, UnsafeMutableRawPointer?) ->
                Int32 = { _, _, _, _ in 0 }
        guard let key = PEM_read_bio_PrivateKey(bio, nil, noPassphrase, nil) else {
            throw GoogleError(call, "\"private_key\" is not a PEM private key (\(Self.libcryptoError()))")
        }
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA else {
            EVP_PKEY_free(key)
            throw GoogleError(call, "\"private_key\" is not an RSA key (RS256 needs one)")
        }
        self.key = key
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// The RS256 signature of `message`.
    func sign(_ message: [UInt8], call: String) throws(GoogleError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw GoogleError(call, "cannot sign: out of memory") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else {
            throw GoogleError(call, "cannot sign: \(Self.libcryptoError())")
        }
        var length = 0
        // Asked first for the size (the key's modulus length), then for the signature itself.
        guard EVP_DigestSign(context, nil, &length, message, message.count) == 1, length > 0 else {
            throw GoogleError(call, "cannot sign: \(Self.libcryptoError())")
        }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1 else {
            throw GoogleError(call, "cannot sign: \(Self.libcryptoError())")
        }
        return Array(signature.prefix(length))
    }

    /// libcrypto's reason for the last failure, its error queue emptied so nothing is left for
    /// the next caller to misread.
    private static func libcryptoError() -> String {
        let code = ERR_peek_last_error()
        defer { ERR_clear_error() }
        guard code != 0, let reason = ERR_reason_error_string(code) else { return "libcrypto gave no reason" }
        return String(cString: reason)
    }
}
