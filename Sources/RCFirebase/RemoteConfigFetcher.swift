import RCCore
import RCHTTP

/// The Remote Config client fetch call: `POST .../v1/projects/{project}/namespaces/firebase:fetch`
/// with the documented body fields, the installation's auth token, `If-None-Match`, and every
/// response state (UPDATE, NO_CHANGE, NO_TEMPLATE, EMPTY_CONFIG). What a device (or a tool acting
/// as one) sends to learn its values; the daemon's `firebase` source is an adapter around it.
public struct RemoteConfigFetcher: Sendable {
    /// What a fetch returned: the document and its ETag, or word that the ETag sent is current.
    public enum Result: Sendable, Equatable {
        case document(RemoteDocument, etag: String?)
        case notModified
    }

    public let endpoints: FirebaseEndpoints
    public let installations: InstallationClient
    public let appId: String
    private let appVersion: String
    private let packageName: String?
    private let signals: [(name: String, value: String)]
    private let facts: DeviceFacts
    /// Timeouts, size limit and TLS files (a CA file serves proxies and private endpoints).
    private let base: HTTPRequest

    /// `appVersion`: dotted, its fourth field (if any) is sent as `appBuild`; `signals`: the
    /// custom signals the conditions of the template can test.
    public init(
        endpoints: FirebaseEndpoints, installations: InstallationClient, appId: String, appVersion: String,
        packageName: String?, signals: [(name: String, value: String)], facts: DeviceFacts, base: HTTPRequest
    ) {
        self.endpoints = endpoints
        self.installations = installations
        self.appId = appId
        self.appVersion = appVersion
        self.packageName = packageName
        self.signals = signals
        self.facts = facts
        self.base = base
    }

    /// `type` is the `X-Firebase-RC-Fetch-Type` header: `BASE/1`, or `REALTIME/<attempt>` after a
    /// realtime invalidation. `etag` identifies the document the caller has.
    public func fetch(etag: String?, type: String = "BASE/1") async throws(FirebaseError) -> Result {
        var attempt = 0
        while true {
            attempt += 1
            let (fid, token) = try await installations.token()
            let response = try await send(fid: fid, token: token, etag: etag, type: type)
            switch response.status {
            case 200:
                do {
                    return .document(
                        try RemoteDocument.parse(response.body, name: "Firebase fetch response"),
                        etag: response.header("etag"))
                } catch {
                    throw FirebaseError(.badDocument, error.description)
                }
            case 304 where etag.map(HeaderField.isValidValue) == true:
                return .notModified
            case 401 where attempt == 1:
                // The auth token was refused: get a new one and try once more.
                await installations.invalidateToken()
                continue
            case let status where FetchFailure.throttles(status: status):
                throw FirebaseError(
                    .throttled(retryAfter: response.retryAfter()),
                    FirebaseError.describe(response, call: "Firebase fetch"))
            case 500...599:
                throw FirebaseError(.unavailable, FirebaseError.describe(response, call: "Firebase fetch"))
            default:
                throw FirebaseError(.other, FirebaseError.describe(response, call: "Firebase fetch"))
            }
        }
    }

    private func send(fid: String, token: String, etag: String?, type: String) async throws(FirebaseError)
        -> HTTPResponse
    {
        var body: [(key: String, value: JSONValue)] = [
            ("appInstanceId", .string(fid)), ("appInstanceIdToken", .string(token)), ("appId", .string(appId)),
            ("appVersion", .string(appVersion)), ("sdkVersion", .string(BuildInfo.version)),
            ("languageCode", .string(facts.languageCode)), ("timeZone", .string(facts.timeZone)),
            ("platformVersion", .string(facts.platformVersion)),
        ]
        if let countryCode = facts.countryCode { body.append(("countryCode", .string(countryCode))) }
        if let packageName { body.append(("packageName", .string(packageName))) }
        if let build = appVersion.split(separator: ".", omittingEmptySubsequences: false).dropFirst(3).first {
            body.append(("appBuild", .string(String(build))))
        }
        if !signals.isEmpty {
            body.append(("customSignals", .object(signals.map { ($0.name, JSONValue.string($0.value)) })))
        }
        var request = base
        request.url = endpoints.fetch
        request.method = "POST"
        request.body = Array(JSONValue.object(body).compactText.utf8)
        // The body carries the installation's auth token (appInstanceIdToken): a 307 or 308 would
        // send it to whatever host it names. Firebase does not redirect its fetch; a redirect is the
        // answer (a failed fetch). So the ETag stored is always the configured origin's, too.
        request.followsRedirects = false
        request.headers = [
            "Content-Type: application/json", "Accept: application/json", "X-Goog-Api-Key: \(endpoints.apiKey)",
            "X-Goog-Firebase-Installations-Auth: \(token)", "X-Firebase-RC-Fetch-Type: \(type)",
        ]
        // An ETag HTTP cannot carry (stored before responses were checked) is not sent: the fetch
        // is then unconditional and stores the new one.
        if let etag, HeaderField.isValidValue(etag) { request.headers.append("If-None-Match: \(etag)") }
        do {
            return try await HTTPClient.send(request)
        } catch {
            throw FirebaseError(.unavailable, "Firebase fetch: \(error.message) (\(error.kind.rawValue))")
        }
    }
}
