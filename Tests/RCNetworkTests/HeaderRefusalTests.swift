import RCHTTP
import Testing

/// The last check before libcurl (issue 25 item 7): a header line HTTP cannot carry is refused
/// before anything is sent, whoever built it; the address refuses connections, so reaching the
/// network would show as a connect error instead.
/// Time-limited: its async tests wait on gates, continuations or peers, and a hang must fail, not block CI.
@Suite(.timeLimit(.minutes(10))) struct HeaderRefusalTests {
    @Test func aHeaderWithCRLFIsRefusedBeforeAnyConnection() async {
        for line in ["X-Group: lobby\r\nX-Injected: 1", "X-Group: a\u{0}", "Bad Name: v"] {
            var request = HTTPRequest(url: "http://127.0.0.1:1/c.json")
            request.headers = [line]
            do {
                _ = try await HTTPClient.send(request)
                Issue.record("sent \(line.debugDescription)")
            } catch {
                #expect(error.message.hasPrefix("refusing to send the header "), "\(error.message)")
            }
        }
        var request = HTTPRequest(url: "http://127.0.0.1:1/c.json")
        request.userAgent = "rcagent\r\nX-Injected: 1"
        await #expect(throws: HTTPError.self) { try await HTTPClient.send(request) }
    }
}
