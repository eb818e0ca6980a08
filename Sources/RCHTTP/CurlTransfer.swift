internal import CCurl
import Glibc
import RCCore
import RCSystem
import Synchronization

/// One libcurl easy handle, owned: created in `init`, cleaned up in `deinit`. `perform` blocks,
/// so it only ever runs on a thread of its own (see ``HTTPClient``), never on the cooperative pool.
final class CurlTransfer {
    private let handle: UnsafeMutableRawPointer
    /// curl writes its detailed error message here; allocated because curl keeps the pointer.
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)

    init() throws(HTTPError) {
        do { try HTTPClient.initializeOnce() } catch {
            errorBuffer.deallocate()
            throw error
        }
        guard let handle = curl_easy_init() else {
            errorBuffer.deallocate()
            throw HTTPError(kind: .transport, message: "cannot create a curl handle")
        }
        self.handle = handle
    }

    deinit {
        curl_easy_cleanup(handle)
        errorBuffer.deallocate()
    }

    /// The most redirects one request follows.
    static let maximumRedirects = 5

    /// Runs the transfer, following redirects itself (see ``next(after:to:status:)``).
    /// With `stream`, the body of a 200 response goes to `stream` as it arrives (and is not kept);
    /// the transfer ends when the server closes it or `stream.isCancelled`.
    func perform(_ request: HTTPRequest, stream: StreamReceiver? = nil) throws(HTTPError) -> HTTPResponse {
        // curl and OpenSSL open these files themselves, blocking: a FIFO there would hang the transfer
        // thread for good. Only regular files (and links owned by root or this user) are handed on.
        for (key, path) in [
            ("CAFile", request.caFile), ("ClientCertificate", request.clientCertificate),
            ("ClientKey", request.clientKey),
        ] {
            guard let path else { continue }
            do { try FileBytes.checkRegularFile(path) } catch {
                throw HTTPError(kind: .tls, message: "cannot use \(key)=: \(error)")
            }
        }
        // Every header goes out as given, or not at all: a value with a CR or LF would end it and
        // start another (a config's Header=, a token or ETag from a server are all checked here).
        for line in request.headers + ["User-Agent: \(request.userAgent)"] {
            if let problem = HeaderField.problem(inLine: line) {
                let name = line.prefix { $0 != ":" }
                throw HTTPError(
                    kind: .transport,
                    message:
                        "refusing to send the header \(TextEscaping.snippet(String(name), maxBytes: 64)): \(problem)")
            }
        }
        let configuredOrigin = URLText.comparableOrigin(of: request.url)
        let deadline = ContinuousClock.now + request.timeout
        var hop = request
        for redirects in 0...Self.maximumRedirects {
            // The request's own headers (Header= secrets, API keys, tokens) go to the configured
            // origin only: libcurl would send them to any host a redirect names.
            let origin = URLText.comparableOrigin(of: hop.url)
            hop.headers = origin == configuredOrigin ? request.headers : []
            // An ETag HTTP cannot carry is not sent (the request is then unconditional).
            if let validator = request.validator, validator.origin == origin, HeaderField.isValidValue(validator.etag) {
                hop.headers.append("If-None-Match: \(validator.etag)")
            }
            if request.timeout > .zero {
                // FetchTimeout= bounds the whole request, redirects included.
                let left = deadline - ContinuousClock.now
                guard left > .milliseconds(1) else {
                    throw HTTPError(
                        kind: .timeout,
                        message: "timed out after \(request.timeout.milliseconds / 1_000)s: while following redirects")
                }
                hop.timeout = left
                hop.connectTimeout = min(request.connectTimeout, left)
            }
            var (response, location) = try performOnce(hop, stream: stream, original: request)
            response.url = hop.url
            guard request.followsRedirects, let location, Self.redirectStatuses.contains(response.status) else {
                return response
            }
            guard redirects < Self.maximumRedirects else {
                throw HTTPError(
                    kind: .transport,
                    message:
                        "too many redirects (more than \(Self.maximumRedirects)), the last from \(hop.url) to \(location)"
                )
            }
            hop = try Self.next(after: hop, to: location, status: response.status)
        }
        throw HTTPError(kind: .transport, message: "too many redirects")  // not reached: the loop returns or throws
    }

    /// The statuses that are followed, as libcurl would (300 and 304 are answers, not redirects).
    static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]

    /// The request a redirect to `location` asks for. Only http and https are followed, and never
    /// from https to http: that would send the request, and whatever it carries, in clear.
    static func next(after request: HTTPRequest, to location: String, status: Int) throws(HTTPError) -> HTTPRequest {
        let from = request.url.prefix(8).lowercased()
        let to = location.prefix(8).lowercased()
        guard to.hasPrefix("http://") || to.hasPrefix("https://") else {
            throw HTTPError(
                kind: .transport, message: "refusing a redirect to \(location) (only http and https are followed)")
        }
        if from.hasPrefix("https://") && to.hasPrefix("http://") {
            throw HTTPError(
                kind: .transport, message: "refusing a redirect from https to http: \(request.url) to \(location)")
        }
        var next = request
        next.url = location
        // As libcurl and browsers do: 303 always, and 301/302 after a POST, continue with a GET.
        if status == 303 || (request.method == "POST" && (status == 301 || status == 302)) {
            next.method = "GET"
            next.body = nil
        }
        return next
    }

    /// One request, no redirects followed: the response and, for a redirect, the absolute URL
    /// it names (libcurl resolves a relative `Location`).
    private func performOnce(
        _ request: HTTPRequest, stream: StreamReceiver?, original: HTTPRequest
    ) throws(HTTPError) -> (HTTPResponse, String?) {
        let h = handle
        let state = TransferState(limit: request.maximumResponseSize, handle: h, stream: stream)
        let context = Unmanaged.passUnretained(state).toOpaque()
        var headerList: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(headerList) }
        // Body bytes curl reads from: allocated, since curl keeps the pointer until perform returns.
        var body: UnsafeMutableBufferPointer<UInt8>?
        defer { body?.deallocate() }

        errorBuffer[0] = 0
        var failed: CURLcode = CURLE_OK
        func set(_ code: CURLcode) { if failed == CURLE_OK { failed = code } }
        set(rc_curl_setopt_string(h, CURLOPT_URL, request.url))
        set(rc_curl_setopt_pointer(h, CURLOPT_ERRORBUFFER, errorBuffer))
        // Threads: no signals for DNS timeouts (libcurl's threaded resolver handles them).
        set(rc_curl_setopt_long(h, CURLOPT_NOSIGNAL, 1))
        set(rc_curl_setopt_string(h, CURLOPT_PROTOCOLS_STR, "http,https"))
        // Redirects are followed by `perform`, which decides what the next request may carry.
        set(rc_curl_setopt_long(h, CURLOPT_FOLLOWLOCATION, 0))
        set(rc_curl_setopt_long(h, CURLOPT_SSL_VERIFYPEER, 1))
        set(rc_curl_setopt_long(h, CURLOPT_SSL_VERIFYHOST, 2))
        set(rc_curl_setopt_long(h, CURLOPT_CONNECTTIMEOUT_MS, Int(request.connectTimeout.milliseconds)))
        set(rc_curl_setopt_long(h, CURLOPT_TIMEOUT_MS, Int(request.timeout.milliseconds)))  // 0: no limit (streams)
        set(rc_curl_setopt_long(h, CURLOPT_TCP_KEEPALIVE, 1))  // a dead peer ends an idle stream too
        set(rc_curl_setopt_string(h, CURLOPT_ACCEPT_ENCODING, ""))  // every encoding curl can decode
        set(rc_curl_setopt_off(h, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(request.maximumResponseSize)))
        set(rc_curl_setopt_string(h, CURLOPT_USERAGENT, request.userAgent))
        if let caFile = request.caFile {
            // Only this CA: without clearing CAPATH, OpenSSL would still trust /etc/ssl/certs too.
            set(rc_curl_setopt_string(h, CURLOPT_CAINFO, caFile))
            set(rc_curl_setopt_pointer(h, CURLOPT_CAPATH, nil))
        }
        if let certificate = request.clientCertificate { set(rc_curl_setopt_string(h, CURLOPT_SSLCERT, certificate)) }
        if let key = request.clientKey { set(rc_curl_setopt_string(h, CURLOPT_SSLKEY, key)) }
        for header in request.headers { headerList = curl_slist_append(headerList, header) }
        if request.method == "GET" {
            // The handle is reused for the next hop of a redirect: undo a previous hop's POST.
            set(rc_curl_setopt_pointer(h, CURLOPT_CUSTOMREQUEST, nil))
            set(rc_curl_setopt_long(h, CURLOPT_HTTPGET, 1))
        } else {
            set(rc_curl_setopt_string(h, CURLOPT_CUSTOMREQUEST, request.method))
            let bytes = request.body ?? []
            let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(bytes.count, 1))
            _ = buffer.initialize(from: bytes)
            body = buffer
            set(rc_curl_setopt_pointer(h, CURLOPT_POSTFIELDS, buffer.baseAddress))
            set(rc_curl_setopt_off(h, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(bytes.count)))
        }
        set(rc_curl_setopt_slist(h, CURLOPT_HTTPHEADER, headerList))
        set(
            rc_curl_setopt_callback(
                h, CURLOPT_WRITEFUNCTION,
                { data, size, count, context in
                    Unmanaged<TransferState>.fromOpaque(context!).takeUnretainedValue().receiveBody(data!, size * count)
                }))
        set(rc_curl_setopt_pointer(h, CURLOPT_WRITEDATA, context))
        set(
            rc_curl_setopt_callback(
                h, CURLOPT_HEADERFUNCTION,
                { data, size, count, context in
                    Unmanaged<TransferState>.fromOpaque(context!).takeUnretainedValue().receiveHeader(
                        data!, size * count)
                }))
        set(rc_curl_setopt_pointer(h, CURLOPT_HEADERDATA, context))
        if stream != nil {
            // Called about once a second even on an idle stream: where a cancelled stream stops.
            set(rc_curl_setopt_long(h, CURLOPT_NOPROGRESS, 0))
            set(
                rc_curl_setopt_progress(
                    h,
                    { context, _, _, _, _ in
                        Unmanaged<TransferState>.fromOpaque(context!).takeUnretainedValue().stream!.isCancelled ? 1 : 0
                    }))
            set(rc_curl_setopt_pointer(h, CURLOPT_XFERINFODATA, context))
        }
        guard failed == CURLE_OK else {
            throw HTTPError(
                kind: .transport, message: "cannot set up the request: \(String(cString: curl_easy_strerror(failed)))")
        }

        let code = curl_easy_perform(h)
        if code == CURLE_ABORTED_BY_CALLBACK || code == CURLE_WRITE_ERROR, stream?.isCancelled == true {
            return (HTTPResponse(status: 200, headers: state.headers, body: []), nil)
        }
        if code != CURLE_OK { throw error(code, state: state, request: original) }
        var status = 0
        _ = rc_curl_getinfo_long(h, CURLINFO_RESPONSE_CODE, &status)
        var location: UnsafeMutablePointer<CChar>?
        _ = rc_curl_getinfo_string(h, CURLINFO_REDIRECT_URL, &location)
        return (
            HTTPResponse(status: status, headers: state.headers, body: state.body), location.map { String(cString: $0) }
        )
    }

    /// A failed transfer as a typed error: what kind (timeout, too large, TLS, connect, DNS...) and
    /// curl's own words from the error buffer.
    private func error(_ code: CURLcode, state: TransferState, request: HTTPRequest) -> HTTPError {
        let detail = errorBuffer[0] != 0 ? String(cString: errorBuffer) : String(cString: curl_easy_strerror(code))
        let kind: HTTPError.Kind
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: kind = .dns
        case CURLE_COULDNT_CONNECT: kind = .connect
        case CURLE_OPERATION_TIMEDOUT: kind = .timeout
        case CURLE_FILESIZE_EXCEEDED: kind = .tooLarge
        case CURLE_WRITE_ERROR where state.exceeded: kind = .tooLarge
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_CRL_BADFILE, CURLE_USE_SSL_FAILED:
            kind = .tls
        default: kind = .transport
        }
        let message =
            switch kind {
            case .tooLarge: "response larger than \(request.maximumResponseSize) bytes"
            case .timeout: "timed out after \(request.timeout.milliseconds / 1_000)s: \(detail)"
            default: detail
            }
        return HTTPError(kind: kind, message: message)
    }
}

/// Where a streamed response body goes, chunk by chunk, on the transfer's thread (see
/// ``HTTPClient/stream(_:into:)``): a long-lived response read as it arrives, such as Firebase's
/// realtime invalidation stream. Cancelling it ends the transfer within about a second.
public final class StreamReceiver: Sendable {
    private let cancelled = Mutex(false)
    /// Called with each chunk of a 200 response's body, in order, on the transfer's thread.
    let receive: @Sendable ([UInt8]) -> Void
    /// Called once the response headers of a 200 are complete: the stream is open.
    let onOpen: @Sendable () -> Void

    public init(onOpen: @escaping @Sendable () -> Void = {}, receive: @escaping @Sendable ([UInt8]) -> Void) {
        self.onOpen = onOpen
        self.receive = receive
    }

    public var isCancelled: Bool { cancelled.withLock { $0 } }

    /// Ends the transfer (from any thread): it returns as if the server had closed the stream.
    public func cancel() { cancelled.withLock { $0 = true } }
}

/// What the callbacks collect during one transfer.
private final class TransferState {
    let limit: Int
    let handle: UnsafeMutableRawPointer
    let stream: StreamReceiver?
    var body: [UInt8] = []
    var headers: [(name: String, value: String)] = []
    var exceeded = false

    init(limit: Int, handle: UnsafeMutableRawPointer, stream: StreamReceiver?) {
        self.limit = limit
        self.handle = handle
        self.stream = stream
    }

    /// curl's write callback: a streamed 200 goes to the stream receiver (until it is cancelled);
    /// anything else is kept, and the transfer stops once the size limit is passed (returning less
    /// than `count` makes curl abort).
    func receiveBody(_ data: UnsafeMutablePointer<CChar>, _ count: Int) -> Int {
        if let stream {
            var status = 0
            _ = rc_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
            if status == 200 {
                if stream.isCancelled { return 0 }
                stream.receive(
                    data.withMemoryRebound(to: UInt8.self, capacity: count) {
                        Array(UnsafeBufferPointer(start: $0, count: count))
                    })
                return count
            }
        }
        guard body.count + count <= limit else {
            exceeded = true
            return 0  // anything but `count` makes curl stop with CURLE_WRITE_ERROR
        }
        // The body's whole length at once when the server says it (within the limit): grown by
        // doubling, a 4 MiB body held up to 6 MiB while the array moved.
        if body.capacity == 0 {
            var length: curl_off_t = -1
            _ = rc_curl_getinfo_off(handle, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length)
            if length > 0 { body.reserveCapacity(min(Int(length), limit)) }
        }
        data.withMemoryRebound(to: UInt8.self, capacity: count) {
            body.append(contentsOf: UnsafeBufferPointer(start: $0, count: count))
        }
        return count
    }

    /// curl's header callback: one header line at a time; a new status line (after a redirect or a
    /// 100 Continue) starts the headers again, and the blank line after a streamed 200's headers
    /// tells the stream receiver it is open.
    func receiveHeader(_ data: UnsafeMutablePointer<CChar>, _ count: Int) -> Int {
        // By its bytes (``HeaderLine``): a line of combining marks must not cost its square.
        let line = data.withMemoryRebound(to: UInt8.self, capacity: count) {
            HeaderLine.parse(UnsafeBufferPointer(start: $0, count: count))
        }
        switch line {
        case .end:
            if let stream {
                var status = 0
                _ = rc_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
                if status == 200 { stream.onOpen() }
            }
        case .status:
            headers = []  // a new response (redirect, 100 Continue): only the last one's headers count
        case let .field(name, value):
            headers.append((name, value))
        case .ignored:
            break  // a bare CR or a NUL in the value, a name that is not a token: as if not sent
        }
        return count
    }
}
