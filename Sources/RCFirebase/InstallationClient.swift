import Glibc
import RCCore
import RCHTTP
import RCSystem

/// Firebase Installations (FIS): the device's installation, registered once, and the short-lived
/// auth token every Remote Config call (fetch and realtime) carries. The refresh token lives in a
/// 0600 file (the daemon's is `installation.json` beside the database), written atomically.
public actor InstallationClient {
    struct Credentials: Equatable {
        var fid: String
        var refreshToken: String
        var authToken: String?
        var expiresAt: Timestamp?
    }

    private let endpoints: FirebaseEndpoints
    private let appId: String
    /// The id to register: the device id, until Firebase says another installation has it or that
    /// the registered installation is gone (then a new random id).
    private var fid: String
    private let path: String
    private let base: HTTPRequest
    private var credentials: Credentials?
    /// The registration or refresh in flight: concurrent callers (a fetch and the realtime stream
    /// at start-up) share it instead of registering twice.
    private var inFlight: Task<(fid: String, token: String), any Error>?
    /// The credentials file is written with fsync: on a queue of its own, not the cooperative pool.
    private let executor = QueueExecutor(label: "rcagent.installations")
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    static let sdkVersion = "l:\(BuildInfo.version)"
    /// A token counts as expired an hour before it really does (the SDKs' buffer).
    static let expiryBuffer: Duration = .seconds(3600)
    /// The longest an auth token is taken to live, whatever the server says (the SDKs' tokens last 7 days).
    package static let maximumTokenLifetime: Duration = .seconds(30 * 24 * 3600)

    /// `installationId`: the id to register if `credentialsPath` holds no installation yet (the
    /// daemon's device id). `base`: timeouts, size limit and TLS files every request starts from.
    public init(
        endpoints: FirebaseEndpoints, appId: String, installationId: String, credentialsPath: String,
        base: HTTPRequest
    ) {
        self.endpoints = endpoints
        self.appId = appId
        self.fid = installationId
        self.path = credentialsPath
        self.base = base
        credentials = Self.load(path)
    }

    /// The installation id and a valid auth token, registering or refreshing as needed.
    public func token() async throws(FirebaseError) -> (fid: String, token: String) {
        if let current = credentials, let token = current.authToken, let expiry = current.expiresAt,
            expiry > .now() + Self.expiryBuffer
        {
            return (current.fid, token)
        }
        let task = inFlight ?? Task { try await self.obtainToken() }
        inFlight = task
        defer { inFlight = nil }
        do {
            return try await task.value
        } catch let error as FirebaseError {
            throw error
        } catch {
            throw FirebaseError(.other, "Firebase Installations: \(error)")
        }
    }

    /// Registers the installation if there is none yet, then returns the cached auth token while it is
    /// valid, or asks for a new one with the refresh token (a 401 or 404 there means the installation
    /// is gone on the server: it is forgotten and a new one, with a new id, is registered, once, at once).
    private func obtainToken() async throws(FirebaseError) -> (fid: String, token: String) {
        if credentials == nil { try await register() }
        guard var current = credentials else { throw FirebaseError(.other, "Firebase Installations: no credentials") }
        if let token = current.authToken, let expiry = current.expiresAt, expiry > .now() + Self.expiryBuffer {
            return (current.fid, token)
        }
        var request = jsonRequest(endpoints.generateToken(fid: current.fid))
        request.headers.append("Authorization: FIS_v2 \(current.refreshToken)")
        request.body = Array(
            JSONValue.object([
                ("installation", .object([("sdkVersion", .string(Self.sdkVersion)), ("appId", .string(appId))]))
            ]).compactText.utf8)
        let response = try await send(request, what: "generate an auth token")
        switch response.status {
        case 200:
            let (token, expiresAt) = try Self.token(from: response.body)
            current.authToken = token
            current.expiresAt = expiresAt
            try save(current)
            return (current.fid, token)
        case 401, 404:
            // The installation is gone on the server (deleted, or its refresh token revoked): the SDKs
            // discard it and create a new one with a new random id (Android FirebaseInstallations
            // deletes the entry and starts from a fresh FID; iOS FIRInstallationsIDController does
            // the same), never the old id again: the server may still hold it as deleted.
            forget()
            fid = DeviceID.generate()
            try await register()
            guard let fresh = credentials, let token = fresh.authToken else {
                throw FirebaseError(.other, "Firebase Installations: re-registration gave no token")
            }
            return (fresh.fid, token)
        default:
            throw Self.failure("generate an auth token", response)
        }
    }

    /// Drops the cached auth token (the fetch said 401): the next call refreshes it.
    public func invalidateToken() {
        credentials?.authToken = nil
        credentials?.expiresAt = nil
    }

    /// Creates the installation (`POST .../installations`) and stores its refresh token and first auth
    /// token. A conflict on the id (409: another installation has it) registers a new random id, as
    /// the SDKs do; an id the server assigns wins over the one sent.
    private func register() async throws(FirebaseError) {
        var response = try await create()
        if response.status == 409 {
            // Another installation has this id (ALREADY_EXISTS): the SDKs make a new one and register
            // that; the new id is kept in the credentials file, the device id stays as it is.
            fid = DeviceID.generate()
            response = try await create()
        }
        guard response.status == 200 else { throw Self.failure("create the installation", response) }
        let json: JSONValue
        do { json = try JSONValue.parse(response.body) } catch {
            throw FirebaseError(.badDocument, "Firebase Installations: \(error)")
        }
        guard let refreshToken = json["refreshToken"]?.stringValue, let auth = json["authToken"] else {
            throw FirebaseError(
                .badDocument, "Firebase Installations: the create response lacks refreshToken/authToken")
        }
        // Both are sent back as header values: one with a CR or LF would add headers of the server's choosing.
        if let problem = HeaderField.problem(inValue: refreshToken) {
            throw FirebaseError(.badDocument, "Firebase Installations: the refreshToken is unusable: \(problem)")
        }
        let (token, expiresAt) = try Self.token(from: Array(auth.compactText.utf8))
        // The server may assign another id; the SDKs use the server's.
        let credentials = Credentials(
            fid: json["fid"]?.stringValue ?? fid, refreshToken: refreshToken, authToken: token, expiresAt: expiresAt)
        try save(credentials)
    }

    /// The create call itself: the id, the app id, the auth version and the SDK version, as the SDKs send them.
    private func create() async throws(FirebaseError) -> HTTPResponse {
        var request = jsonRequest(endpoints.createInstallation)
        request.body = Array(
            JSONValue.object([
                ("fid", .string(fid)), ("authVersion", .string("FIS_v2")), ("appId", .string(appId)),
                ("sdkVersion", .string(Self.sdkVersion)),
            ]).compactText.utf8)
        return try await send(request, what: "create the installation")
    }

    /// A JSON POST to `url` with the API key header, from the base request (timeouts, TLS files).
    private func jsonRequest(_ url: String) -> HTTPRequest {
        var request = base
        request.url = url
        request.method = "POST"
        request.headers = [
            "Content-Type: application/json", "Accept: application/json", "x-goog-api-key: \(endpoints.apiKey)",
        ]
        return request
    }

    /// Sends `request`; a transfer that fails (DNS, connect, TLS, timeout) is `unavailable`.
    private func send(_ request: HTTPRequest, what: String) async throws(FirebaseError) -> HTTPResponse {
        do {
            let response = try await HTTPClient.send(request)
            // One retry on a server error, as the SDKs do.
            if (500...599).contains(response.status) { return try await HTTPClient.send(request) }
            return response
        } catch {
            throw FirebaseError(
                .unavailable, "Firebase Installations: cannot \(what): \(error.message) (\(error.kind.rawValue))")
        }
    }

    /// `{"token": "...", "expiresIn": "604800s"}` (package access: the parser fuzz targets call it).
    package static func token(from body: [UInt8], now: Timestamp = .now()) throws(FirebaseError) -> (String, Timestamp)
    {
        guard let json = try? JSONValue.parse(body), let token = json["token"]?.stringValue,
            HeaderField.isValidValue(token), let expires = json["expiresIn"]?.stringValue, expires.hasSuffix("s"),
            let seconds = Double(expires.dropLast()), seconds.isFinite, seconds >= 0
        else {
            throw FirebaseError(.badDocument, "Firebase Installations: unreadable auth token response")
        }
        // Capped before the conversion: a huge expiresIn would overflow Int64 and trap.
        let lifetime = min(seconds, Double(maximumTokenLifetime.components.seconds))
        return (token, now + .milliseconds(Int64(lifetime * 1_000)))
    }

    /// An HTTP error as a typed failure: throttled for 429 and 503 (the fetch's backoff then holds),
    /// else other; the message quotes the API's own error text.
    private static func failure(_ what: String, _ response: HTTPResponse) -> FirebaseError {
        let text = FirebaseError.describe(response, call: "Firebase Installations: cannot \(what)")
        return FirebaseError(
            FetchFailure.throttles(status: response.status) ? .throttled(retryAfter: nil) : .other, text,
            permanent: FirebaseError.isPermanent(response))
    }

    /// Drops the installation (memory and file): the server no longer knows it.
    private func forget() {
        credentials = nil
        unlink(path)
    }

    /// Writes the credentials atomically, mode 0600 (temporary file, fsync, rename): the refresh token
    /// is a secret, and a crash must leave the old file or the new one, never half of one.
    private func save(_ credentials: Credentials) throws(FirebaseError) {
        self.credentials = credentials
        let json = JSONValue.object([
            ("fid", .string(credentials.fid)), ("refreshToken", .string(credentials.refreshToken)),
            ("authToken", credentials.authToken.map(JSONValue.string) ?? .null),
            ("expiresAt", credentials.expiresAt.map { .integer($0.milliseconds) } ?? .null),
        ])
        do {
            try FileBytes.writeAtomically(path, Array(json.compactText.utf8), mode: 0o600)
        } catch {
            throw FirebaseError(.other, "cannot store the installation credentials: \(error)")
        }
    }

    /// Reads stored credentials; a missing or unreadable file means none (the installation is registered again).
    private static func load(_ path: String) -> Credentials? {
        guard let bytes = try? FileBytes.read(path), let json = try? JSONValue.parse(bytes),
            let fid = json["fid"]?.stringValue, let refresh = json["refreshToken"]?.stringValue,
            HeaderField.isValidValue(refresh), json["authToken"]?.stringValue.map(HeaderField.isValidValue) ?? true
        else { return nil }
        var expiresAt: Timestamp?
        if case let .integer(ms)? = json["expiresAt"] { expiresAt = Timestamp(milliseconds: ms) }
        return Credentials(
            fid: fid, refreshToken: refresh, authToken: json["authToken"]?.stringValue, expiresAt: expiresAt)
    }
}
