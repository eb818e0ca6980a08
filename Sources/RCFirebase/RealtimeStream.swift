import RCCore
import RCHTTP
import Synchronization

/// Firebase's realtime invalidation stream (`streamFetchInvalidations`): a long-lived
/// POST whose body is a sequence of JSON objects. A `latestTemplateVersionNumber` announces a newly
/// published template; `featureDisabled` ends the stream for good; `retryIntervalSeconds` sets the
/// next reconnect. This type speaks the protocol of one connection at a time; when and how often to
/// reconnect, and what an announcement starts, is the caller's (the daemon's RealtimeListener).
public struct RealtimeStream: Sendable {
    /// What a connection reported while it was open, in stream order.
    public enum Event: Sendable, Equatable {
        /// The server answered 200: the stream is open (a message may have been missed before).
        case opened
        /// A template with this version number was published.
        case templatePublished(version: Int64)
        /// A message that is not JSON, as received (cut short): ignored.
        case unreadable(String)
    }

    /// How a connection ended.
    public enum Outcome: Sendable, Equatable {
        /// It was open, then ended (server closed it, or the caller cancelled).
        case ended(retryInterval: Duration?)
        /// It never opened: why, and the server's retry interval if it sent one.
        case failed(String, retryInterval: Duration?)
        /// The project has realtime updates turned off: do not reconnect.
        case disabled
        /// Refused in a way reconnecting will not change: 403, an API key Google does not know, or a
        /// project or app Google does not know (404 NOT_FOUND), at the stream or at Firebase
        /// Installations. Every other failure is `failed`: retried.
        case stopped(String)
    }

    /// The longest `retryIntervalSeconds` followed: a larger one (a bad or hostile value) would keep
    /// a device, or the relay, from reconnecting for years.
    public static let maximumRetryInterval: Duration = .seconds(3600)

    private let endpoints: FirebaseEndpoints
    private let appId: String
    private let installations: InstallationClient
    private let base: HTTPRequest

    /// `base`: TLS files and size limit; the stream itself has no overall timeout.
    public init(endpoints: FirebaseEndpoints, appId: String, installations: InstallationClient, base: HTTPRequest) {
        self.endpoints = endpoints
        self.appId = appId
        self.installations = installations
        self.base = base
    }

    /// Opens one connection and reads it until it ends or the calling task is cancelled.
    /// `lastKnownVersion` and `etag` describe the template the caller has. `onEvent` runs on the
    /// transfer's thread, in stream order: it must hand the event on, not wait for work it starts.
    public func connect(
        lastKnownVersion: Int64?, etag: String?, onEvent: @escaping @Sendable (Event) -> Void
    ) async -> Outcome {
        let credentials: (fid: String, token: String)
        do { credentials = try await installations.token() } catch {
            return error.permanent ? .stopped(error.message) : .failed(error.message, retryInterval: nil)
        }
        var request = base
        request.url = endpoints.streamInvalidations
        request.method = "POST"
        request.timeout = .zero
        request.headers = [
            "Content-Type: application/json", "Accept: application/json", "X-Goog-Api-Key: \(endpoints.apiKey)",
            "X-Goog-Firebase-Installations-Auth: \(credentials.token)", "X-Accept-Response-Streaming: true",
            "If-None-Match: \(etag.flatMap { HeaderField.isValidValue($0) ? $0 : nil } ?? "*")",
        ]
        request.body = Array(
            JSONValue.object([
                ("project", .string(endpoints.project)), ("namespace", .string("firebase")),
                ("lastKnownVersionNumber", .string(String(lastKnownVersion ?? 0))), ("appId", .string(appId)),
                ("sdkVersion", .string(BuildInfo.version)), ("appInstanceId", .string(credentials.fid)),
            ]).compactText.utf8)
        let connection = Connection(onEvent: onEvent)
        let outcome = await connection.run(request)
        if case .failed = outcome, connection.lastStatus == 401 {
            // The auth token was refused: the next connection gets a new one.
            await installations.invalidateToken()
        }
        return outcome
    }

    /// One connection: the framer and what the messages said so far, shared with the transfer thread.
    private final class Connection: Sendable {
        private struct State {
            var framer = RealtimeStreamFramer()
            var opened = false
            var disabled = false
            var retryInterval: Duration?
            var status: Int?
            /// Set while the transfer runs, so `featureDisabled` can end it; cleared after (it
            /// refers back to this connection).
            var receiver: StreamReceiver?
        }

        private let state = Mutex(State())
        private let onEvent: @Sendable (Event) -> Void

        init(onEvent: @escaping @Sendable (Event) -> Void) {
            self.onEvent = onEvent
        }

        var lastStatus: Int? { state.withLock { $0.status } }

        /// Opens the stream and reads it until the server ends it, the transfer fails or ``stop()``;
        /// the outcome says which, with the HTTP status when there was one.
        func run(_ request: HTTPRequest) async -> Outcome {
            let receiver = StreamReceiver(
                onOpen: { [self] in
                    state.withLock { $0.opened = true }
                    onEvent(.opened)
                },
                receive: { [self] bytes in receive(bytes) })
            state.withLock { $0.receiver = receiver }
            defer { state.withLock { $0.receiver = nil } }
            let response: HTTPResponse
            do {
                response = try await withTaskCancellationHandler { () async throws(HTTPError) -> HTTPResponse in
                    try await HTTPClient.stream(request, into: receiver)
                } onCancel: {
                    receiver.cancel()
                }
            } catch {
                // Only HTTPError is thrown (withTaskCancellationHandler does not carry the type on).
                let reason = (error as? HTTPError).map { "\($0.message) (\($0.kind.rawValue))" } ?? "\(error)"
                let (disabled, opened, retry) = state.withLock { ($0.disabled, $0.opened, $0.retryInterval) }
                if disabled { return .disabled }
                return opened ? .ended(retryInterval: retry) : .failed(reason, retryInterval: retry)
            }
            let (disabled, retry) = state.withLock {
                $0.status = response.status
                return ($0.disabled, $0.retryInterval)
            }
            if disabled { return .disabled }
            if response.status == 200 { return .ended(retryInterval: retry) }
            let message = FirebaseError.describe(response, call: "realtime")
            // A 401 gets a new auth token (``connect``); a 500, a 400 or a proxy's 404 may pass: only
            // what no retry changes stops (one transient error used to end the relay for good).
            if FirebaseError.isPermanent(response) { return .stopped(message) }
            return .failed(
                message,
                retryInterval: response.status == 401
                    ? nil : (retry ?? response.retryAfter()).map { min($0, RealtimeStream.maximumRetryInterval) })
        }

        /// Splits the stream into top-level JSON objects and handles each.
        private func receive(_ bytes: [UInt8]) {
            let (messages, skipped) = state.withLock { state in
                let before = state.framer.oversized
                let messages = state.framer.append(bytes)
                return (messages, state.framer.oversized - before)
            }
            for message in messages { handle(message) }
            // Skipped to its end without being held: said once, when it passes the limit.
            for _ in 0..<skipped {
                onEvent(.unreadable("a message over \(RealtimeStreamFramer.maximumBuffered) bytes, skipped unread"))
            }
        }

        /// One message of the stream: `featureDisabled` (the stream ends, not to be reopened), a retry
        /// interval the server asks for, a new template version (the invalidation), or something
        /// unreadable, which is reported and skipped (the stream goes on).
        private func handle(_ bytes: [UInt8]) {
            guard let json = try? JSONValue.parse(bytes) else {
                onEvent(.unreadable(String(decoding: bytes.prefix(200), as: UTF8.self)))
                return
            }
            if case .bool(true) = json["featureDisabled"] {
                let receiver = state.withLock {
                    $0.disabled = true
                    return $0.receiver
                }
                receiver?.cancel()  // end this stream; the outcome says not to reconnect
                return
            }
            if let seconds = json["retryIntervalSeconds"].flatMap(Self.integer), seconds >= 0 {
                state.withLock { $0.retryInterval = min(.seconds(seconds), RealtimeStream.maximumRetryInterval) }
            }
            if let version = json["latestTemplateVersionNumber"].flatMap(Self.integer) {
                onEvent(.templatePublished(version: version))
            }
        }

        /// Realtime numbers arrive as strings (proto3 int64) or numbers.
        private static func integer(_ value: JSONValue) -> Int64? {
            switch value {
            case let .integer(i): i
            case let .string(s): Int64(s)
            default: nil
            }
        }
    }
}
