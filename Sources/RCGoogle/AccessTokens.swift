import RCCore
import RCHTTP
import RCSystem

/// OAuth 2.0 access tokens for one service account and set of scopes (Google's server-to-server
/// flow): a signed JWT exchanged at the key file's `token_uri` with a form-encoded POST, the token
/// cached until a minute before it expires. Concurrent callers share one exchange. There is no
/// refresh token in this flow: a new token is a new signed assertion.
public actor AccessTokens {
    public let account: ServiceAccount
    public let scopes: [String]
    private let base: HTTPRequest
    private let retry: RetryPolicy
    private let clock: @Sendable () -> Timestamp
    private var cached: (token: String, expiresAt: Timestamp)?
    /// The exchange in flight, shared by every caller that arrives while it runs.
    private var inFlight: Task<(token: String, expiresAt: Timestamp), any Error>?

    /// A token is replaced this long before it expires, so none expires on its way to Google.
    public static let refreshMargin: Duration = .seconds(60)
    /// The longest a token is taken to live, whatever `expires_in` says (Google's last an hour).
    static let maximumLifetime: Duration = .seconds(24 * 3600)

    /// `base`: timeouts, size limit, CA file and user agent of the token request. `clock`: the wall
    /// clock (the JWT's `iat` and the cache's expiry; tests move it).
    public init(
        account: ServiceAccount, scopes: [String], base: HTTPRequest = GoogleAPI.defaultRequest,
        retry: RetryPolicy = RetryPolicy(), clock: @escaping @Sendable () -> Timestamp = { Timestamp.now() }
    ) {
        self.account = account
        self.scopes = scopes
        self.base = base
        self.retry = retry
        self.clock = clock
    }

    /// A valid access token: the cached one while it has more than ``refreshMargin`` to live, else a new one.
    public func token() async throws(GoogleError) -> String {
        if let cached, cached.expiresAt - clock() > Self.refreshMargin { return cached.token }
        let task = inFlight ?? Task { try await self.exchange() }
        inFlight = task
        defer { inFlight = nil }
        do {
            // The exchange is a task of its own (shared by concurrent callers), so the caller's
            // cancellation (SIGTERM in the relay) does not reach it by itself: without this, a
            // cancelled caller would wait out every Retry-After of the exchange's retries.
            let fresh = try await withTaskCancellationHandler {
                try await task.value
            } onCancel: {
                task.cancel()
            }
            cached = fresh
            return fresh.token
        } catch let error as GoogleError {
            throw error
        } catch {
            throw GoogleError("token request to \(TextEscaping.terminal(account.tokenURI))", "\(error)")
        }
    }

    /// Forgets the cached token (an API answered 401): the next ``token()`` asks for a new one.
    /// With `token`, only if that is still the cached one (another caller may have replaced it).
    public func invalidate(_ token: String? = nil) {
        if token == nil || cached?.token == token { cached = nil }
    }

    /// One exchange: `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=<JWT>`,
    /// answered by `{"access_token", "expires_in", "token_type"}` or `{"error", "error_description"}`.
    private func exchange() async throws(GoogleError) -> (token: String, expiresAt: Timestamp) {
        let call = "token request to \(TextEscaping.terminal(account.tokenURI))"
        let now = clock()
        let assertion = try account.signedJWT(scopes: scopes, issuedAt: now)
        var request = base
        request.url = account.tokenURI
        request.method = "POST"
        request.headers = ["Content-Type: application/x-www-form-urlencoded", "Accept: application/json"]
        let form = [("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), ("assertion", assertion)]
        request.body = Array(
            form.map { "\($0.0)=\(TextEscaping.percentEncoded($0.1))" }.joined(separator: "&").utf8)
        let response = try await retry.send(request, call: call)
        guard response.status == 200 else { throw GoogleError(response: response, call: call) }
        return try Self.parse(response.body, call: call, now: now)
    }

    /// The token answer: `access_token` (sent as a header, so printable ASCII only), `expires_in`
    /// seconds, and `token_type` Bearer when present.
    package static func parse(_ body: [UInt8], call: String, now: Timestamp) throws(GoogleError) -> (
        token: String, expiresAt: Timestamp
    ) {
        let json: JSONValue
        do { json = try JSONValue.parse(body) } catch { throw GoogleError(call, "the answer is not JSON: \(error)") }
        guard let token = json["access_token"]?.stringValue, !token.isEmpty else {
            throw GoogleError(call, "the answer has no \"access_token\" string")
        }
        guard token.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw GoogleError(call, "\"access_token\" has characters a header cannot carry")
        }
        if let type = json["token_type"], type.stringValue?.lowercased() != "bearer" {
            throw GoogleError(
                call, "\"token_type\" is \(TextEscaping.snippet(type.compactText, maxBytes: 64)), not \"Bearer\"")
        }
        let seconds: Int64
        switch json["expires_in"] {
        case let .integer(value)?: seconds = value
        case let .double(value)? where value.isFinite: seconds = value < 0 ? -1 : Int64(min(value, 1e12))
        case let .string(text)?: seconds = Int64(text) ?? -1
        default: throw GoogleError(call, "the answer has no \"expires_in\" number")
        }
        guard seconds >= 0 else { throw GoogleError(call, "\"expires_in\" is not a number of seconds") }
        let lifetime = min(Duration.seconds(seconds), maximumLifetime)
        return (token, now + lifetime)
    }
}
