internal import CCurl
internal import CLazyLibraries
import Glibc
import RCCore
import RCSystem

/// Sends HTTP requests with libcurl on threads of their own, so a slow server never holds a
/// cooperative-pool thread. Proxies come from the environment (`http_proxy`, `https_proxy`,
/// `no_proxy`) as curl reads them.
public enum HTTPClient {
    private static let initialized: Bool = {
        curl_global_init(Int(CURL_GLOBAL_ALL)) == CURLE_OK
    }()

    /// curl_global_init is not thread-safe: it runs once, before the first handle exists. libcurl is
    /// loaded on first use (CLazyLibraries): a device with only a file source need not have it.
    static func initializeOnce() throws(HTTPError) {
        if let problem = rc_lazy_require(RC_LAZY_CURL) {
            throw HTTPError(kind: .transport, message: "HTTP needs \(String(cString: problem))")
        }
        _ = initialized
    }

    /// Sends `request` and returns the whole response; an HTTP error status is a response, not a throw.
    public static func send(_ request: HTTPRequest) async throws(HTTPError) -> HTTPResponse {
        try await perform(request, stream: nil)
    }

    /// A long-lived request whose 200 body arrives piece by piece in `stream`; returns when the
    /// server ends it or the receiver is cancelled. Other statuses come back with their body.
    public static func stream(_ request: HTTPRequest, into stream: StreamReceiver) async throws(HTTPError)
        -> HTTPResponse
    {
        try await perform(request, stream: stream)
    }

    /// Runs the blocking transfer on a thread of its own and resumes the caller when it is done: curl
    /// blocks for up to the request's timeout, which must never hold a cooperative-pool thread.
    private static func perform(_ request: HTTPRequest, stream: StreamReceiver?) async throws(HTTPError) -> HTTPResponse
    {
        try initializeOnce()
        return try await DetachedThread.run(
            noThread: HTTPError(kind: .transport, message: "cannot start a transfer thread")
        ) { () throws(HTTPError) in try CurlTransfer().perform(request, stream: stream) }
    }
}
