import RCCore
import RCHTTP
import RCTemplate

/// The `http` source: GET with `If-None-Match`; 304 means the snapshot the agent has
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
        // Stored as `ORIGIN ETAG;CONTEXT`. The evaluation context: after a context change the
        // document is fetched whole again, or a 304 would keep values evaluated for the old signals.
        // The origin that sent the ETag: it goes back to that origin only (a CDN's ETag, after a
        // redirect, is not the configured server's). A value stored in another form (an older
        // version's) is not sent: one whole fetch replaces it.
        let context = ";" + reader.contextTag
        let validator = etag.flatMap { Self.validator(stored: $0, context: context) }
        request.validator = validator
        let response: HTTPResponse
        do {
            response = try await HTTPClient.send(request)
        } catch {
            throw SourceError(.unavailable, "GET \(url): \(error.message) (\(error.kind.rawValue))")
        }
        switch response.status {
        case 200:
            do {
                // HTTPResponse keeps only header values HTTP can carry (no CR, LF or NUL).
                let origin = URLText.comparableOrigin(of: response.url)
                let stored = response.header("etag").flatMap { tag in origin.map { "\($0) \(tag)\(context)" } }
                // The reader gets the only reference to the body and frees it once parsed: a 4 MiB
                // body is not kept beside the values read from it (BENCHMARKS.md, issue 30).
                let body = response.body
                _ = consume response
                return .document(try reader.read(consume body, name: url), etag: stored)
            } catch {
                throw SourceError(.badDocument, error.description)
            }
        case 304 where validator != nil:
            return .notModified
        case let status where FetchFailure.throttles(status: status):
            let retryAfter = response.retryAfter()
            throw SourceError(
                .throttled(retryAfter: retryAfter), "GET \(url): HTTP \(response.status)" + Self.snippet(response.body))
        case 500...599:
            throw SourceError(.unavailable, "GET \(url): HTTP \(response.status)" + Self.snippet(response.body))
        default:
            throw SourceError(.other, "GET \(url): HTTP \(response.status)" + Self.snippet(response.body))
        }
    }

    /// The validator in a stored `ORIGIN ETAG;CONTEXT`, when it is one for `context`.
    static func validator(stored: String, context: String) -> HTTPRequest.Validator? {
        guard stored.hasSuffix(context), let space = stored.firstIndex(of: " ") else { return nil }
        let tag = stored[stored.index(after: space)...].dropLast(context.count)
        guard !tag.isEmpty, HeaderField.isValidValue(tag) else { return nil }
        return HTTPRequest.Validator(origin: String(stored[..<space]), etag: String(tag))
    }

    /// The start of an error body, for the log and status (servers often say why there).
    private static func snippet(_ body: [UInt8]) -> String {
        let text = TextEscaping.snippet(body, maxBytes: 200)  // no line break or ESC from the server
        return text.isEmpty ? "" : ": \(text)"
    }
}

extension HTTPRequest {
    /// A request with the config's timeouts (total = FetchTimeout, connect at most 10 s), size
    /// limit and TLS files: what every source request starts from.
    init(url: String, config: AgentConfig) {
        self.init(url: url)
        timeout = config.fetchTimeout
        connectTimeout = min(config.fetchTimeout, .seconds(10))
        maximumResponseSize = config.maxResponseSize
        caFile = config.caFile
        clientCertificate = config.clientCertificate
        clientKey = config.clientKey
    }
}
