import FoundationEssentials
import Glibc
import RCCore
import RCHTTP
import TestSupport
import Testing

@testable import RCGoogle

/// RCGoogle's service-account side: key files, the RS256 JWT (checked by the real `openssl` CLI),
/// base64url, token answers and Google's error envelopes.
@Suite struct GoogleAuthTests {
    @Test func base64urlHasNoPaddingAndNoStandardCharacters() {
        // 0xfb 0xff encodes to "+/8=" in standard base64.
        #expect(Base64URL.encode([0xfb, 0xff]) == "-_8")
        #expect(Base64URL.encode([]) == "")
        #expect(Base64URL.encode(Array("any carnal pleas".utf8)) == "YW55IGNhcm5hbCBwbGVhcw")
        for length in 0..<64 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 251) }
            let text = Base64URL.encode(bytes)
            #expect(!text.contains { $0 == "+" || $0 == "/" || $0 == "=" })
            #expect(Base64URL.decode(text) == bytes)
        }
        #expect(Base64URL.decode("+/8=") == nil)
        #expect(Base64URL.decode("a") == nil)
    }

    @Test func theJWTVerifiesWithOpenSSLAndCarriesTheClaims() throws {
        try TemporaryDirectory.with { directory in
            let keys = try TestServiceAccount(in: directory)
            let account = try keys.account
            let now = Timestamp(milliseconds: 1_800_000_000_123)
            let jwt = try account.signedJWT(scopes: [GoogleScope.remoteConfig, GoogleScope.messaging], issuedAt: now)
            let parts = jwt.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            try #require(parts.count == 3)
            for part in parts { #expect(!part.contains { $0 == "+" || $0 == "/" || $0 == "=" }) }

            let header = String(decoding: try #require(Base64URL.decode(parts[0])), as: UTF8.self)
            #expect(header == #"{"alg":"RS256","typ":"JWT","kid":"0123456789abcdef"}"#)
            let claims = try JSONValue.parse(try #require(Base64URL.decode(parts[1])))
            #expect(claims["iss"] == .string("rcadmin@demo-project.iam.gserviceaccount.com"))
            #expect(claims["scope"] == .string("\(GoogleScope.remoteConfig) \(GoogleScope.messaging)"))
            #expect(claims["aud"] == .string("https://oauth2.googleapis.com/token"))
            #expect(claims["iat"] == .integer(1_800_000_000))
            #expect(claims["exp"] == .integer(1_800_003_600))
            #expect(claims["sub"] == nil)

            // The signature over "header.claims", verified by openssl with the public half of the key.
            let input = try directory.write("input.txt", parts[0] + "." + parts[1])
            let signature = try directory.write("signature.bin", bytes: try #require(Base64URL.decode(parts[2])))
            let verified = try runProcess(
                "/usr/bin/openssl", ["dgst", "-sha256", "-verify", keys.publicKeyPath, "-signature", signature, input])
            #expect(verified.status == 0)
            #expect(verified.stdout.contains("Verified OK"))
            // And the check can fail: the same signature over other claims does not verify.
            let forged = try directory.write("forged.txt", parts[0] + "." + Base64URL.encode(Array("{}".utf8)))
            let refused = try runProcess(
                "/usr/bin/openssl", ["dgst", "-sha256", "-verify", keys.publicKeyPath, "-signature", signature, forged])
            #expect(refused.status != 0)
        }
    }

    @Test func aPKCS1KeyFileSignsToo() throws {
        try TemporaryDirectory.with { directory in
            let keys = try TestServiceAccount(in: directory)
            let traditional = directory.file("traditional.pem")
            try TestServiceAccount.openssl(["rsa", "-in", keys.keyPath, "-traditional", "-out", traditional])
            let pem = String(decoding: try directory.read("traditional.pem"), as: UTF8.self)
            #expect(pem.hasPrefix("-----BEGIN RSA PRIVATE KEY-----"))
            let file = TestServiceAccount.keyFile(pem: pem, tokenURI: "https://oauth2.googleapis.com/token")
            let account = try ServiceAccount.parse(Array(file.compactText.utf8), path: "traditional.json")
            #expect(try account.signedJWT(scopes: [GoogleScope.messaging]).split(separator: ".").count == 3)
        }
    }

    @Test func keyFileErrorsNameTheFileAndTheFieldButNeverTheKey() throws {
        try TemporaryDirectory.with { directory in
            let keys = try TestServiceAccount(in: directory)
            let pem = String(decoding: try directory.read("key.pem"), as: UTF8.self)
            let secret = pem.split(separator: "\n")[1]  // a line of the key's base64
            func refusal(_ changes: [String: JSONValue?]) -> String {
                let file = TestServiceAccount.keyFile(
                    pem: pem, tokenURI: "https://oauth2.googleapis.com/token", changes: changes)
                do throws(GoogleError) {
                    _ = try ServiceAccount.parse(Array(file.compactText.utf8), path: "/keys/sa.json")
                    return "accepted"
                } catch {
                    #expect(!error.description.contains(secret))
                    return error.description
                }
            }
            for field in ["type", "project_id", "private_key_id", "private_key", "client_email", "token_uri"] {
                #expect(refusal([field: nil]) == "service account key /keys/sa.json: no \"\(field)\" field")
            }
            #expect(
                refusal(["client_email": .integer(5)])
                    == "service account key /keys/sa.json: \"client_email\" must be a non-empty string, not number")
            #expect(
                refusal(["type": .string("authorized_user")]).contains(
                    "\"type\" is \"authorized_user\", not \"service_account\""))
            #expect(
                refusal(["token_uri": .string("http://tokens.example/token")]).contains("\"token_uri\" is plain http"))
            #expect(
                refusal(["token_uri": .string("ftp://x/token")]).contains("\"token_uri\" is not an http or https URL"))
            #expect(refusal(["token_uri": .string("http://127.0.0.1:8080/token")]) == "accepted")
            // A damaged key: its text is not in the message, what is wrong with it is.
            let damaged = pem.replacingOccurrences(of: String(secret), with: String(secret.reversed()))
            let message = refusal(["private_key": .string(damaged)])
            #expect(message.hasPrefix("service account key /keys/sa.json: \"private_key\" is not a PEM private key"))
            #expect(!message.contains(String(secret.reversed())))

            #expect(throws: GoogleError.self) { try ServiceAccount.load(path: directory.file("missing.json")) }
            do throws(GoogleError) {
                _ = try ServiceAccount.load(path: directory.file("missing.json"))
            } catch {
                #expect(error.description == "service account key \(directory.file("missing.json")): no such file")
            }
            _ = try directory.write("broken.json", "{\"type\": ")
            do throws(GoogleError) {
                _ = try ServiceAccount.load(path: directory.file("broken.json"))
                Issue.record("a truncated key file was accepted")
            } catch {
                #expect(
                    error.description.hasPrefix("service account key \(directory.file("broken.json")): invalid JSON"))
            }
            // Printing the account shows who it is, never the key.
            let account = try keys.account
            #expect(!"\(account)".contains(secret))
            var dumped = ""
            dump(account, to: &dumped)
            #expect(!dumped.contains(secret))
            #expect(dumped.contains("demo-project"))
        }
    }

    /// A key file path is the operator's, but what is there may not be a key file: a FIFO must not
    /// block the command for good, a directory or device is refused by kind, and a 10 MB
    /// `private_key` by the file's size, each error naming the file and none quoting the key.
    @Test func keyFilePathsThatAreNoKeyFilesAreRefusedWithoutBlocking() throws {
        try TemporaryDirectory.with { directory in
            let fifo = directory.file("fifo.json")
            try #require(mkfifo(fifo, 0o600) == 0)
            let huge = try directory.write(
                "huge.json",
                TestServiceAccount.keyFile(
                    pem: "-----BEGIN PRIVATE KEY-----\n" + String(repeating: "S", count: 10_000_000),
                    tokenURI: "https://t"
                ).compactText)
            for (path, why) in [
                (fifo, "is a FIFO"), (directory.path, "is a directory"), ("/dev/zero", "is a character device"),
                (huge, "larger than"),
            ] {
                #expect {
                    try ServiceAccount.load(path: path)
                } throws: { error in
                    let text = "\(error)"
                    return text.contains("service account key \(path)") && text.contains(why) && !text.contains("SSSS")
                }
            }
        }
    }

    @Test func tokenAnswersAreChecked() throws {
        let now = Timestamp(milliseconds: 1_800_000_000_000)
        func parse(_ text: String) throws(GoogleError) -> (token: String, expiresAt: Timestamp) {
            try AccessTokens.parse(Array(text.utf8), call: "token request to T", now: now)
        }
        let good = try parse(#"{"access_token": "ya29.abc", "expires_in": 3599, "token_type": "Bearer"}"#)
        #expect(good.token == "ya29.abc")
        #expect(good.expiresAt == now + .seconds(3599))
        #expect(try parse(#"{"access_token": "t", "expires_in": 1e300}"#).expiresAt == now + .seconds(24 * 3600))
        for (body, reason) in [
            (#"{"expires_in": 3599}"#, "no \"access_token\" string"),
            (#"{"access_token": "a\r\nX-Injected: 1", "expires_in": 3599}"#, "characters a header cannot carry"),
            (#"{"access_token": "t", "expires_in": 3599, "token_type": "MAC"}"#, "not \"Bearer\""),
            (#"{"access_token": "t"}"#, "no \"expires_in\" number"),
            (#"{"access_token": "t", "expires_in": -1}"#, "not a number of seconds"),
            ("<html>", "not JSON"),
        ] {
            do {
                _ = try parse(body)
                Issue.record("accepted \(body)")
            } catch {
                #expect(error.description.hasPrefix("token request to T: "))
                #expect(error.description.contains(reason), "\(error.description)")
            }
        }
    }

    @Test func googleErrorsCarryTheStatusAndGooglesWords() {
        func response(_ status: Int, _ body: String) -> (status: Int, body: [UInt8]) { (status, Array(body.utf8)) }
        let rest = GoogleError(
            answer: response(
                412,
                #"{"error": {"code": 412, "message": "[VERSION_MISMATCH]: stale\u001b[31m", "status": "FAILED_PRECONDITION"}}"#
            ),
            call: "Remote Config: publish the firebase template")
        #expect(rest.status == 412)
        #expect(rest.googleStatus == "FAILED_PRECONDITION")
        #expect(rest.message == "[VERSION_MISMATCH]: stale\\x1b[31m")
        #expect(
            rest.description
                == "Remote Config: publish the firebase template: HTTP 412 FAILED_PRECONDITION: [VERSION_MISMATCH]: stale\\x1b[31m"
        )

        let fcm = GoogleError(
            answer: response(
                404,
                #"{"error": {"code": 404, "message": "Requested entity was not found.", "status": "NOT_FOUND", "details": [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "UNREGISTERED"}]}}"#
            ), call: "FCM: send a message")
        #expect(fcm.errorCode == "UNREGISTERED")
        #expect(
            fcm.description == "FCM: send a message: HTTP 404 NOT_FOUND (UNREGISTERED): Requested entity was not found."
        )

        let oauth = GoogleError(
            answer: response(400, #"{"error": "invalid_grant", "error_description": "Invalid JWT Signature."}"#),
            call: "token request to https://oauth2.googleapis.com/token")
        #expect(oauth.googleStatus == "invalid_grant")
        #expect(
            oauth.description
                == "token request to https://oauth2.googleapis.com/token: HTTP 400 invalid_grant: Invalid JWT Signature."
        )

        let html = GoogleError(answer: response(502, "<html>Bad\ngateway</html>"), call: "GET u", note: "gave up")
        #expect(html.description == "GET u: HTTP 502: <html>Bad\\ngateway</html> (gave up)")
        #expect(GoogleError("GET u", "no ETag in the answer").description == "GET u: no ETag in the answer")
    }

    @Test func backoffDoublesWithJitterAndIsCapped() {
        var policy = RetryPolicy()
        policy.random = { 0.5 }  // no jitter
        #expect(policy.backoff(failures: 1) == .milliseconds(500))
        #expect(policy.backoff(failures: 2) == .seconds(1))
        #expect(policy.backoff(failures: 4) == .seconds(4))
        #expect(policy.backoff(failures: 100) == .seconds(60))
        policy.random = { 0 }
        #expect(policy.backoff(failures: 3) == .seconds(1))
        policy.random = { 0.999 }
        #expect(policy.backoff(failures: 3) == .milliseconds(2998))
        #expect(policy.backoff(failures: 30) == .seconds(60))
    }

    @Test func credentialsGoOnlyToHTTPSOrThisMachine() {
        #expect(GoogleEndpoint.refusal("https://firebaseremoteconfig.googleapis.com/v1") == nil)
        #expect(GoogleEndpoint.refusal("http://127.0.0.1:9/x") == nil)
        #expect(GoogleEndpoint.refusal("http://localhost:9/x") == nil)
        #expect(GoogleEndpoint.refusal("http://[::1]:9/x") == nil)
        #expect(GoogleEndpoint.refusal("http://127.0.0.1.evil.example/x") != nil)
        #expect(GoogleEndpoint.refusal("http://example.com/x") != nil)
        #expect(
            GoogleEndpoint.origin("http://127.0.0.1:8080/ignored/path", default: "https://d") == "http://127.0.0.1:8080"
        )
        #expect(GoogleEndpoint.origin(nil, default: "https://d") == "https://d")
    }
}

extension GoogleError {
    fileprivate init(answer: (status: Int, body: [UInt8]), call: String, note: String? = nil) {
        self.init(status: answer.status, body: answer.body, call: call, note: note)
    }
}
