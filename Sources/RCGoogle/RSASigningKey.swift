internal import CCrypto
internal import CLazyLibraries
import RCSigning

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
        // The PEM goes through a copy that is wiped as soon as the key is read (a Swift string cannot
        // be cleared); Google's key files are never encrypted, so no passphrase is asked for.
        guard let key = Libcrypto.readKey(Array(pem.utf8), .privateKey) else {
            throw GoogleError(call, "\"private_key\" is not a PEM private key (\(Libcrypto.lastError()))")
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
            throw GoogleError(call, "cannot sign: \(Libcrypto.lastError())")
        }
        var length = 0
        // Asked first for the size (the key's modulus length), then for the signature itself.
        guard EVP_DigestSign(context, nil, &length, message, message.count) == 1, length > 0 else {
            throw GoogleError(call, "cannot sign: \(Libcrypto.lastError())")
        }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1 else {
            throw GoogleError(call, "cannot sign: \(Libcrypto.lastError())")
        }
        return Array(signature.prefix(length))
    }
}
