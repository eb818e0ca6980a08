import RCCore
import RCFirebase
import Testing

/// RCFirebase's reading of a Firebase Installations auth token response.
@Suite struct InstallationTokenTests {
    let now = Timestamp(milliseconds: 1_800_000_000_000)

    func expiry(_ expiresIn: String) -> Timestamp? {
        try? InstallationClient.token(from: Array(#"{"token": "t", "expiresIn": "\#(expiresIn)"}"#.utf8), now: now).1
    }

    @Test func expiryIsCheckedAndCapped() {
        // Int64(seconds * 1000) trapped on these (found by the installation-token fuzz target).
        #expect(expiry("1e300s") == now + InstallationClient.maximumTokenLifetime)
        #expect(expiry("nans") == nil)
        #expect(expiry("infs") == nil)
        #expect(expiry("-5s") == nil)
        #expect(expiry("3600s") == now + .seconds(3600))
    }

    /// Issue 25: the token is sent back as the X-Goog-Firebase-Installations-Auth header; one with
    /// CR LF would have added a header of the server's choosing to every realtime request.
    @Test func aTokenHTTPCannotCarryIsRefused() {
        for token in ["t\r\nX-Injected: 1", "t\u{0}", "t\n", "t\u{7F}"] {
            let body = JSONValue.object([("token", .string(token)), ("expiresIn", .string("3600s"))]).compactText
            #expect(throws: FirebaseError.self, "\(token.debugDescription)") {
                try InstallationClient.token(from: Array(body.utf8), now: now)
            }
        }
        #expect(expiry("3600s") != nil, "a plain token still reads")
    }

    @Test func anUnreadableResponseIsABadDocumentNamingTheAPI() {
        #expect(throws: FirebaseError.self) { try InstallationClient.token(from: Array("{}".utf8), now: now) }
        do {
            _ = try InstallationClient.token(from: Array(#"{"token": 5, "expiresIn": "3600s"}"#.utf8), now: now)
            Issue.record("a numeric token was accepted")
        } catch {
            #expect(error.kind == .badDocument)
            #expect(error.message.hasPrefix("Firebase Installations: "))
        }
    }
}
