import Glibc
import RCCore
import RCSystem

/// A Google service account, as its key file (the JSON the Cloud console downloads) describes it:
/// which project, which account, and the private key that signs its token requests. The key is
/// never part of any description or error: printing a `ServiceAccount` shows the account, not it.
public struct ServiceAccount: Sendable, CustomStringConvertible, CustomReflectable {
    public let projectId: String
    public let clientEmail: String
    public let privateKeyId: String
    /// The PEM text of the RSA private key.
    public let privateKey: String
    /// Where access tokens are asked for; also the JWT's audience.
    public let tokenURI: String
    /// The key file this was read from, for messages.
    public let path: String
    // No public init: an account comes only from a key file that passed ``load(path:)``'s checks.

    /// Key files are a few kilobytes; anything far larger is not one.
    static let maximumFileSize = 1 << 20

    /// Reads and checks the key file at `path`: JSON, `"type": "service_account"`, the five fields
    /// every call needs as non-empty strings, a `token_uri` the token may be asked at, and a private
    /// key libcrypto can read. Each error names the file and the field.
    public static func load(path: String) throws(GoogleError) -> ServiceAccount {
        let call = "service account key \(TextEscaping.terminal(path))"
        let bytes: [UInt8]?
        do { bytes = try FileBytes.read(path, limit: maximumFileSize) } catch {
            throw GoogleError(call, error.description)
        }
        guard let bytes else { throw GoogleError(call, "no such file") }
        return try parse(bytes, path: path)
    }

    /// The key file's content (`path` only names it in errors).
    public static func parse(_ bytes: [UInt8], path: String) throws(GoogleError) -> ServiceAccount {
        let call = "service account key \(TextEscaping.terminal(path))"
        let json: JSONValue
        do { json = try JSONValue.parse(bytes) } catch { throw GoogleError(call, error.description) }
        guard json.objectMembers != nil else {
            throw GoogleError(call, "not a key file: the JSON is \(json.typeName), not an object")
        }
        func field(_ name: String) throws(GoogleError) -> String {
            guard let value = json[name] else { throw GoogleError(call, "no \"\(name)\" field") }
            guard let text = value.stringValue, !text.isEmpty else {
                throw GoogleError(call, "\"\(name)\" must be a non-empty string, not \(value.typeName)")
            }
            return text
        }
        let type = try field("type")
        guard type == "service_account" else {
            throw GoogleError(
                call,
                "\"type\" is \"\(TextEscaping.snippet(type, maxBytes: 64))\", not \"service_account\" "
                    + "(a user's or an external account's credentials cannot sign token requests)")
        }
        let account = ServiceAccount(
            projectId: try field("project_id"), clientEmail: try field("client_email"),
            privateKeyId: try field("private_key_id"), privateKey: try field("private_key"),
            tokenURI: try field("token_uri"), path: path)
        guard let problem = GoogleEndpoint.refusal(account.tokenURI) else {
            _ = try RSASigningKey(pem: account.privateKey, call: call)  // read once now: a bad key fails here
            return account
        }
        throw GoogleError(call, "\"token_uri\" \(problem)")
    }

    /// The warning to show when the key file at `path` can be read by its group or by others, as
    /// ssh warns of a private key anyone may read (the key signs requests as the account); nil when
    /// only its owner can, or when it cannot be examined (reading it fails on its own).
    public static func exposureWarning(path: String) -> String? {
        var status = stat()
        guard stat(path, &status) == 0, status.st_mode & 0o044 != 0 else { return nil }
        let name = TextEscaping.terminal(path)
        return "\(name) is readable by others; chmod 600 \(name)"
    }

    public var description: String {
        "service account \(clientEmail) (project \(projectId), key \(privateKeyId), from \(path))"
    }

    /// What a debugger or `dump` shows: everything but the private key.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "projectId": projectId, "clientEmail": clientEmail, "privateKeyId": privateKeyId,
                "tokenURI": tokenURI, "path": path,
            ])
    }
}
