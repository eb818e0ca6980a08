import RCCore

/// The `firebase` source (SPEC §6): Firebase Installations, then the client fetch call
/// `POST .../v1/projects/{project}/namespaces/firebase:fetch` with the documented body fields,
/// `If-None-Match`, and every response state (UPDATE, NO_CHANGE, NO_TEMPLATE, EMPTY_CONFIG).
public final class FirebaseSource: ConfigSource {
    let endpoints: FirebaseEndpoints
    let installations: InstallationClient
    private let appId: String
    var appIdentifier: String { appId }
    private let appVersion: String
    private let packageName: String?
    private let signals: [(name: String, value: String)]
    private let facts: DeviceFacts
    /// Timeouts, size limit and TLS files from the config (CAFile= serves proxies and private endpoints).
    let base: HTTPRequest

    public init(config: AgentConfig, deviceId: String, environment: [String: String]) {
        endpoints = FirebaseEndpoints(config: config)
        appId = config.appId ?? ""
        appVersion =
            config.appVersion
            ?? config.appPackage.flatMap { try? DpkgStatus.installedVersion(of: $0) } ?? "0"
        packageName = config.appPackage
        signals = config.signals
        facts = DeviceFacts.current(environment: environment)
        base = HTTPRequest(url: "", config: config)
        installations = InstallationClient(
            endpoints: endpoints, appId: appId, deviceId: deviceId, stateDirectory: config.stateDirectory, base: base)
    }

    public var name: String { "firebase project \(endpoints.project)" }

    /// The `X-Firebase-RC-Fetch-Type` header says why: `REALTIME/<attempt>` after a realtime
    /// invalidation, `BASE/1` otherwise.
    public func fetch(etag: String?, trigger: FetchTrigger) async throws(SourceError) -> SourceResult {
        if case let .realtime(attempt) = trigger {
            return try await fetch(etag: etag, type: "REALTIME/\(attempt)")
        }
        return try await fetch(etag: etag, type: "BASE/1")
    }

    /// `type` is the `X-Firebase-RC-Fetch-Type` header: `BASE/1`, or `REALTIME/<attempt>` after a
    /// realtime invalidation.
    func fetch(etag: String?, type: String) async throws(SourceError) -> SourceResult {
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
                    throw SourceError(.badDocument, error.description)
                }
            case 304 where etag != nil:
                return .notModified
            case 401 where attempt == 1:
                // The auth token was refused: get a new one and try once more.
                await installations.invalidateToken()
                continue
            case 429, 502, 503, 504:
                let retryAfter = response.header("retry-after").flatMap { HTTPSource.retryAfter($0, now: .now()) }
                throw SourceError(.throttled(retryAfter: retryAfter), Self.describe(response))
            case 500...599:
                throw SourceError(.unavailable, Self.describe(response))
            default:
                throw SourceError(.other, Self.describe(response))
            }
        }
    }

    private func send(fid: String, token: String, etag: String?, type: String) async throws(SourceError) -> HTTPResponse
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
        request.headers = [
            "Content-Type: application/json", "Accept: application/json", "X-Goog-Api-Key: \(endpoints.apiKey)",
            "X-Goog-Firebase-Installations-Auth: \(token)", "X-Firebase-RC-Fetch-Type: \(type)",
        ]
        if let etag { request.headers.append("If-None-Match: \(etag)") }
        do {
            return try await HTTPClient.send(request)
        } catch {
            throw SourceError(.unavailable, "Firebase fetch: \(error.message) (\(error.kind.rawValue))")
        }
    }

    /// "Firebase fetch: HTTP 403: <the API's error message>".
    static func describe(_ response: HTTPResponse) -> String {
        let message = (try? JSONValue.parse(response.body))?["error"]?["message"]?.stringValue
        return "Firebase fetch: HTTP \(response.status)" + (message.map { ": \(TextEscaping.snippet($0))" } ?? "")
    }
}
