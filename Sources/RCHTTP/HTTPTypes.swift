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

    public init(url: String) {
        self.url = url
    }
}

/// What the server answered (after any redirects were followed): status, headers and the body.
public struct HTTPResponse: Sendable {
    public let status: Int
    /// Header names lower-cased, in the order received (of the final response after redirects).
    public let headers: [(name: String, value: String)]
    public let body: [UInt8]

    /// The last value of the header `name` (any case), if the response has it.
    public func header(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.last { $0.name == lower }?.value
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
