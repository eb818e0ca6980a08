import RCCore
import RCHTTP

/// Authorized calls to a Google REST API with a service account's access tokens: one JSON request,
/// `Authorization: Bearer`, retried on 429/500/503 and on transfer failures as ``RetryPolicy``
/// says, the token renewed once and the call repeated once on a 401, and any other failure turned
/// into a ``GoogleError`` carrying the status and Google's `error.status` and `error.message`.
///
/// Every request accepts gzip: the transfer layer (libcurl) advertises the encodings it decodes,
/// gzip among them, and hands back the decoded body. That matters for Remote Config, which only
/// sends a template's ETag to a request that accepts gzip.
public struct GoogleAPI: Sendable {
    public let tokens: AccessTokens
    /// Timeouts, size limit, CA file and user agent every request starts from.
    public var base: HTTPRequest
    public var retry: RetryPolicy

    /// The operator tool's requests: `rcadmin/<version>`, a minute per request, templates of up to
    /// 16 MiB (3,000 parameters and a million characters of values fit well within), no redirects.
    public static var defaultRequest: HTTPRequest {
        var request = HTTPRequest(url: "")
        request.userAgent = "rcadmin/\(BuildInfo.version)"
        request.maximumResponseSize = 16 << 20
        // Google's APIs and token endpoint answer where they are asked. A redirect would carry the
        // signed assertion (good for an hour) or a template to a host the key file never named, and
        // from a loopback test server over plain http to any machine: a 3xx is an error answer.
        request.followsRedirects = false
        return request
    }

    public init(tokens: AccessTokens, base: HTTPRequest = GoogleAPI.defaultRequest, retry: RetryPolicy = RetryPolicy())
    {
        self.tokens = tokens
        self.base = base
        self.retry = retry
    }

    /// Sends `method url` with `body` as JSON (if any) and `headers` (`Name: value`), authorized.
    /// Returns a 2xx answer; anything else throws. `call` names the request in errors (default:
    /// the method and URL).
    public func send(
        _ method: String, _ url: String, body: JSONValue? = nil, headers: [String] = [], call: String? = nil
    ) async throws(GoogleError) -> HTTPResponse {
        let call = call ?? "\(method) \(TextEscaping.terminal(url))"
        if let problem = GoogleEndpoint.refusal(url) { throw GoogleError(call, "the URL \(problem)") }
        var request = base
        request.url = url
        request.method = method
        request.headers = ["Accept: application/json"] + headers
        if let body {
            request.headers.append("Content-Type: application/json; charset=utf-8")
            request.body = Array(body.compactText.utf8)
        }
        var renewed = false
        while true {
            let token = try await tokens.token()
            var authorized = request
            authorized.headers.append("Authorization: Bearer \(token)")
            let response = try await retry.send(authorized, call: call)
            switch response.status {
            case 200...299:
                return response
            case 401 where !renewed:
                // The token was refused (revoked, or expired early): one new token, one more try.
                renewed = true
                await tokens.invalidate(token)
            default:
                throw GoogleError(response: response, call: call, note: renewed ? "after renewing the token" : nil)
            }
        }
    }

    /// ``send(_:_:body:headers:call:)`` for calls that answer a JSON object: that object and the response.
    public func json(
        _ method: String, _ url: String, body: JSONValue? = nil, headers: [String] = [], call: String? = nil
    ) async throws(GoogleError) -> (JSONValue, HTTPResponse) {
        let call = call ?? "\(method) \(TextEscaping.terminal(url))"
        let response = try await send(method, url, body: body, headers: headers, call: call)
        let json: JSONValue
        do { json = try JSONValue.parse(response.body) } catch {
            throw GoogleError(call, "the answer is not JSON: \(error)", status: response.status)
        }
        guard json.objectMembers != nil else {
            throw GoogleError(call, "the answer is a JSON \(json.typeName), not an object", status: response.status)
        }
        return (json, response)
    }
}
