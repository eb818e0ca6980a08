import Glibc
import RCCore

/// The `http` source (SPEC §6): GET with `If-None-Match`; 304 means the snapshot the agent has
/// is current. 429 and 503 are the server asking for a pause (`Retry-After` honoured).
public struct HTTPSource: ConfigSource {
    public let url: String
    private let template: HTTPRequest
    private let reader: DocumentReader

    init(config: AgentConfig, reader: DocumentReader) {
        self.reader = reader
        let base = config.sourceURL ?? ""
        url = config.endpoint.map { URLText.replacingOrigin(of: base, with: $0) } ?? base
        var request = HTTPRequest(url: url, config: config)
        let userSetsAccept = config.headers.contains { $0.lowercased().hasPrefix("accept:") }
        request.headers = (userSetsAccept ? [] : ["Accept: application/json"]) + config.headers
        template = request
    }

    public var name: String { "http \(url)" }

    public func fetch(etag: String?, trigger: FetchTrigger) async throws(SourceError) -> SourceResult {
        var request = template
        // The stored ETag carries the evaluation context; after a context change the document is
        // fetched whole again, or a 304 would keep values evaluated for the old signals.
        let context = ";" + reader.contextTag
        let serverTag = etag.flatMap { $0.hasSuffix(context) ? String($0.dropLast(context.count)) : nil }
        if let serverTag { request.headers.append("If-None-Match: \(serverTag)") }
        let response: HTTPResponse
        do {
            response = try await HTTPClient.send(request)
        } catch {
            throw SourceError(.unavailable, "GET \(url): \(error.message) (\(error.kind.rawValue))")
        }
        switch response.status {
        case 200:
            do {
                return .document(
                    try reader.read(response.body, name: url), etag: response.header("etag").map { $0 + context })
            } catch {
                throw SourceError(.badDocument, error.description)
            }
        case 304 where serverTag != nil:
            return .notModified
        case 429, 503:
            let retryAfter = response.header("retry-after").flatMap { Self.retryAfter($0, now: .now()) }
            throw SourceError(
                .throttled(retryAfter: retryAfter), "GET \(url): HTTP \(response.status)" + Self.snippet(response.body))
        case 500...599:
            throw SourceError(.unavailable, "GET \(url): HTTP \(response.status)" + Self.snippet(response.body))
        default:
            throw SourceError(.other, "GET \(url): HTTP \(response.status)" + Self.snippet(response.body))
        }
    }

    /// The longest pause a `Retry-After` can impose. The throttle persists across restarts, so a wrong
    /// header (a date years ahead) must not silence the device for longer than this.
    package static let maximumRetryAfter: Duration = .seconds(24 * 3600)

    /// `Retry-After` as delay-seconds or an HTTP-date (RFC 9110 §10.2.3). Package access: the
    /// parser fuzz targets call it.
    package static func retryAfter(_ value: String, now: Timestamp) -> Duration? {
        let trimmed = value.trimmingSpaces()
        if let seconds = Int64(trimmed), seconds >= 0 { return min(.seconds(seconds), maximumRetryAfter) }
        // IMF-fixdate, the only form senders may generate: "Sun, 06 Nov 1994 08:49:37 GMT".
        let fields = trimmed.split(separator: " ")
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        guard fields.count == 6, fields[5] == "GMT", let month = months.firstIndex(of: String(fields[2])),
            let day = Int32(fields[1]), let year = Int32(fields[3]), (1...31).contains(day),
            (1900...9999).contains(year)
        else { return nil }
        let clock = fields[4].split(separator: ":").compactMap { Int32($0) }
        guard clock.count == 3, (0...23).contains(clock[0]), (0...59).contains(clock[1]), (0...60).contains(clock[2])
        else { return nil }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = Int32(month)
        parts.tm_mday = day
        parts.tm_hour = clock[0]
        parts.tm_min = clock[1]
        parts.tm_sec = clock[2]
        let at = Timestamp(milliseconds: Int64(timegm(&parts)) * 1_000)
        return at > now ? min(at - now, maximumRetryAfter) : .zero
    }

    /// The start of an error body, for the log and status (servers often say why there).
    private static func snippet(_ body: [UInt8]) -> String {
        let text = TextEscaping.snippet(body, maxBytes: 200)  // no line break or ESC from the server
        return text.isEmpty ? "" : ": \(text)"
    }
}
