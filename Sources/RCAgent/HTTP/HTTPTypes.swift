import RCCore

/// One HTTP request as the sources make it. TLS peer and host verification are always on.
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

    public init(url: String) {
        self.url = url
    }

    /// A request with the config's timeouts (total = FetchTimeout, connect at most 10 s), size
    /// limit and TLS files: what every source request starts from.
    init(url: String, config: AgentConfig) {
        self.url = url
        timeout = config.fetchTimeout
        connectTimeout = min(config.fetchTimeout, .seconds(10))
        maximumResponseSize = config.maxResponseSize
        caFile = config.caFile
        clientCertificate = config.clientCertificate
        clientKey = config.clientKey
    }
}

public struct HTTPResponse: Sendable {
    public let status: Int
    /// Header names lower-cased, in the order received (of the final response after redirects).
    public let headers: [(name: String, value: String)]
    public let body: [UInt8]

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
