import FoundationEssentials
import RCCore
import TestSupport

@testable import RCGoogle

/// A throwaway service account for tests: an RSA key made by the real `openssl genpkey` and a key
/// file shaped like the ones the Cloud console downloads, in the test's own directory.
struct TestServiceAccount {
    let directory: TemporaryDirectory
    let keyPath: String
    let publicKeyPath: String
    let keyFilePath: String

    /// `tokenURI`: where the key file says tokens come from (a test server's `/token`).
    init(in directory: TemporaryDirectory, tokenURI: String = "https://oauth2.googleapis.com/token") throws {
        self.directory = directory
        keyPath = directory.file("key.pem")
        publicKeyPath = directory.file("service-account-public.pem")
        try Self.openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", keyPath])
        try Self.openssl(["pkey", "-in", keyPath, "-pubout", "-out", publicKeyPath])
        let pem = String(decoding: try directory.read("key.pem"), as: UTF8.self)
        keyFilePath = try directory.write(
            "service-account.json", Self.keyFile(pem: pem, tokenURI: tokenURI).compactText)
    }

    /// The key file's JSON, with `changes` applied (a nil value removes the field).
    static func keyFile(pem: String, tokenURI: String, changes: [String: JSONValue?] = [:]) -> JSONValue {
        var fields: [(key: String, value: JSONValue)] = [
            ("type", .string("service_account")), ("project_id", .string("demo-project")),
            ("private_key_id", .string("0123456789abcdef")), ("private_key", .string(pem)),
            ("client_email", .string("rcadmin@demo-project.iam.gserviceaccount.com")),
            ("client_id", .string("1234567890")), ("auth_uri", .string("https://accounts.google.com/o/oauth2/auth")),
            ("token_uri", .string(tokenURI)),
        ]
        for (name, value) in changes {
            fields.removeAll { $0.key == name }
            if let value { fields.append((name, value)) }
        }
        return .object(fields)
    }

    var account: ServiceAccount {
        get throws { try ServiceAccount.load(path: keyFilePath) }
    }

    @discardableResult
    static func openssl(_ arguments: [String]) throws -> ProcessResult {
        let result = try runProcess("/usr/bin/openssl", arguments)
        guard result.status == 0 else {
            throw TestFailure("openssl \(arguments.joined(separator: " ")): \(result.stderr)")
        }
        return result
    }
}
