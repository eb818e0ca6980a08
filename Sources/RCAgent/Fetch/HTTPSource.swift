import RCCore
import RCHTTP

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
            let retryAfter = response.retryAfter()
            throw SourceError(
                .throttled(retryAfter: retryAfter), "GET \(url): HTTP \(response.status)" + Self.snippet(response.body))
        case 500...599:
            throw SourceError(.unavailable, "GET \(url): HTTP \(response.status)" + Self.snippet(response.body))
        default:
            throw SourceError(.other, "GET \(url): HTTP \(response.status)" + Self.snippet(response.body))
        }
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
