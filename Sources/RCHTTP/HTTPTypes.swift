import RCCore

/// One HTTP request, as the daemon's sources and the operator tool make it. TLS peer and host
/// verification are always on; the request's headers go to its own origin only, never to another
/// host a redirect names.
public struct HTTPRequest: Sendable {
    public var url: String
    public var method = "GET"
    /// `Name: value` lines.
    public var headers: [String] = []
    public var body: [UInt8]?
    public var connectTimeout: Duration = .seconds(10)
    /// The whole transfer, connect included.
    public var timeout: Duration = .seconds(60)
    /// Larger responses are abandoned with ``HTTPError/Kind/tooLarge``.
    public var maximumResponseSize = 4 << 20
    public var caFile: String?
    public var clientCertificate: String?
    public var clientKey: String?
    public var userAgent = "rcagent/\(BuildInfo.version)"
    /// Whether a 301/302/303/307/308 is followed (within the limits of ``CurlTransfer``) or is the
    /// answer. Requests that carry a credential in their body (a signed assertion) or a document
    /// meant for one server only turn it off: a redirect would re-send the body to another host.
    public var followsRedirects = true
    /// The ETag of what the caller has, sent as `If-None-Match` only to the origin it came from
    /// (a CDN's validator after a redirect is not the configured server's, nor the other way round).
    public var validator: Validator?

    /// An entity tag and the origin (``URLText/comparableOrigin(of:)``) that sent it.
    public struct Validator: Sendable, Equatable {
        public let origin: String
        public let etag: String

        public init(origin: String, etag: String) {
            self.origin = origin
            self.etag = etag
        }
    }

    public init(url: String) {
        self.url = url
    }
}

/// What the server answered (after any redirects were followed): status, headers and the body.
/// A header whose value is not an RFC 9110 field-value (a bare CR, a NUL) is dropped as it arrives:
/// no caller stores or sends back what a header could not carry.
public struct HTTPResponse: Sendable {
    public let status: Int
    /// Header names lower-cased, in the order received (of the final response after redirects).
    public let headers: [(name: String, value: String)]
    public let body: [UInt8]
    /// The URL that gave this answer: the request's, or the last one a redirect named.
    public internal(set) var url = ""

    /// The last value of the header `name` (any case), if the response has it.
    public func header(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.last { $0.name.sameBytes(as: lower) }?.value
    }
}

/// A transfer that did not produce an HTTP response: what failed, as far as curl can tell.
public struct HTTPError: Error, CustomStringConvertible, Sendable {
    public enum Kind: String, Sendable {
        case dns, connect, tls, timeout, tooLarge = "too-large", transport
    }

    public let kind: Kind
    public let message: String

    public var description: String { message }
}
