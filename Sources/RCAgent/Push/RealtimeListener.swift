import RCCore

/// Firebase's realtime invalidation stream (`streamFetchInvalidations`, SPEC §6): a long-lived
/// POST whose body is a sequence of JSON objects. A `latestTemplateVersionNumber` above the current
/// version triggers a fetch that must reach it; `featureDisabled` stops the stream; `retryIntervalSeconds`
/// sets the next reconnect. Failed connections back off exponentially with jitter, counted across
/// restarts; every successful (re)connect refetches once, since a message may have been missed.
final class RealtimeListener: Sendable {
    private let source: FirebaseSource
    private let agent: Agent
    private let log: Logger
    private let policy: FetchPolicy

    /// Statuses after which reconnecting makes sense (the SDKs' list); others stop the stream.
    static let retryable: Set<Int> = [408, 429, 502, 503, 504]

    init(source: FirebaseSource, agent: Agent, log: Logger) {
        self.source = source
        self.agent = agent
        self.log = log
        policy = FetchPolicy(minimumInterval: .zero)
    }

    func run() async {
        var failures = Int(await agent.note("realtime.failures") ?? "") ?? 0
        // Streams the server ends soon after opening: each reconnects after twice the wait of the
        // last (1 s, 2 s, 4 s ... 5 min), so a server that keeps closing at once is not hammered.
        var shortStreams = 0
        while !Task.isCancelled {
            if let wait = await retryDelay(), wait > .zero {
                try? await Task.sleep(for: wait)
                if Task.isCancelled { return }
            }
            let session = StreamSession(listener: self)
            let opened = ContinuousClock.now
            let result = await session.run()
            switch result {
            case .disabled:
                log.notice("Realtime updates are disabled for this project (featureDisabled); not reconnecting")
                return
            case let .stopped(reason):
                log.error("Failed to keep the realtime stream: \(reason); not reconnecting")
                return
            case let .ended(retryInterval):
                // It was open: not a failure. Reconnect after the server's interval, or sooner-is-better
                // with a growing pause when streams keep ending within half a minute.
                failures = 0
                shortStreams = ContinuousClock.now - opened < .seconds(30) ? shortStreams + 1 : 0
                let pause = Duration.seconds(min(1 << min(max(shortStreams - 1, 0), 9), 300))
                await schedule(after: max(retryInterval ?? .zero, pause), failures: 0)
            case let .failed(reason, retryInterval):
                failures += 1
                let wait = max(policy.backoff(step: failures), retryInterval ?? .zero)
                log.warning(
                    "Failed to open the realtime stream: \(reason); retrying in \(DurationText.format(.seconds(wait.milliseconds / 1_000)))"
                )
                await schedule(after: wait, failures: failures)
            }
        }
    }

    private func retryDelay() async -> Duration? {
        guard let text = await agent.note("realtime.retryAt"), let ms = Int64(text) else { return nil }
        return Timestamp(milliseconds: ms) - .now()
    }

    private func schedule(after wait: Duration, failures: Int) async {
        await agent.setNote("realtime.failures", String(failures))
        await agent.setNote("realtime.retryAt", String((Timestamp.now() + wait).milliseconds))
    }

    enum Outcome {
        case ended(retryInterval: Duration?)
        case failed(String, retryInterval: Duration?)
        case disabled
        case stopped(String)
    }

    /// One connection of the stream.
    private final class StreamSession: @unchecked Sendable {
        let listener: RealtimeListener
        private let lock = NSLockLite()
        private var framer = RealtimeStreamFramer()
        private var disabled = false
        private var retryInterval: Duration?
        private var receiver: StreamReceiver?

        init(listener: RealtimeListener) {
            self.listener = listener
        }

        func run() async -> Outcome {
            let agent = listener.agent
            let source = listener.source
            let credentials: (fid: String, token: String)
            do { credentials = try await source.installations.token() } catch {
                return .failed(error.message, retryInterval: nil)
            }
            let lastKnown = (try? await agent.currentTemplateVersion()) ?? nil
            let etag = (try? await agent.status())?.fetched.etag
            var request = source.base
            request.url = source.endpoints.streamInvalidations
            request.method = "POST"
            request.timeout = .zero
            request.headers = [
                "Content-Type: application/json", "Accept: application/json",
                "X-Goog-Api-Key: \(source.endpoints.apiKey)",
                "X-Goog-Firebase-Installations-Auth: \(credentials.token)", "X-Accept-Response-Streaming: true",
                "If-None-Match: \(etag ?? "*")",
            ]
            request.body = Array(
                JSONValue.object([
                    ("project", .string(source.endpoints.project)), ("namespace", .string("firebase")),
                    ("lastKnownVersionNumber", .string(String(lastKnown ?? 0))),
                    ("appId", .string(source.appIdentifier)),
                    ("sdkVersion", .string(BuildInfo.version)), ("appInstanceId", .string(credentials.fid)),
                ]).compactText.utf8)
            let receiver = StreamReceiver { [self] bytes in receive(bytes) }
            lock.withLock { self.receiver = receiver }
            let opened = OpenFlag()
            receiver.onOpen = { [listener] in
                opened.set()
                listener.log.info("Realtime stream open")
                // A message may have been missed while disconnected.
                Task { await agent.refetch(toReach: nil) }
            }
            let response: HTTPResponse
            do {
                response = try await withTaskCancellationHandler { () async throws(HTTPError) -> HTTPResponse in
                    try await HTTPClient.stream(request, into: receiver)
                } onCancel: {
                    receiver.cancel()
                }
            } catch let error as HTTPError {
                if isDisabled { return .disabled }
                return opened.isSet
                    ? .ended(retryInterval: retry)
                    : .failed("\(error.message) (\(error.kind.rawValue))", retryInterval: retry)
            } catch {
                return .failed("\(error)", retryInterval: retry)
            }
            if isDisabled { return .disabled }
            if response.status == 200 { return .ended(retryInterval: retry) }
            let message = FirebaseSource.describe(response).replacing("Firebase fetch", with: "realtime")
            if response.status == 401 {
                await source.installations.invalidateToken()
                return .failed(message, retryInterval: nil)
            }
            return RealtimeListener.retryable.contains(response.status)
                ? .failed(message, retryInterval: retry) : .stopped(message)
        }

        private var isDisabled: Bool { lock.withLock { disabled } }
        private var retry: Duration? { lock.withLock { retryInterval } }

        /// Splits the stream into top-level JSON objects and handles each.
        private func receive(_ bytes: [UInt8]) {
            let messages = lock.withLock { framer.append(bytes) }
            for message in messages { handle(message) }
        }

        private func handle(_ bytes: [UInt8]) {
            guard let json = try? JSONValue.parse(bytes) else {
                listener.log.warning(
                    "Ignoring an unreadable realtime message: \(String(decoding: bytes.prefix(200), as: UTF8.self))")
                return
            }
            if case .bool(true) = json["featureDisabled"] {
                let receiver = lock.withLock {
                    disabled = true
                    return self.receiver
                }
                receiver?.cancel()  // end this stream; `run` then stops reconnecting
                return
            }
            if let seconds = json["retryIntervalSeconds"].flatMap(Self.integer), seconds >= 0 {
                lock.withLock { retryInterval = .seconds(seconds) }
            }
            if let version = json["latestTemplateVersionNumber"].flatMap(Self.integer) {
                let agent = listener.agent
                let log = listener.log
                Task {
                    guard await agent.isNewer(version) else { return }
                    log.info("Realtime: template \(version) published; fetching")
                    await agent.refetch(toReach: version)
                }
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

/// Set once from the transfer thread, read after it.
private final class OpenFlag: @unchecked Sendable {
    private let lock = NSLockLite()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}
