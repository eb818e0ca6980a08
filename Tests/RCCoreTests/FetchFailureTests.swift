import RCCore
import Testing

/// `FetchFailure.throttles(status:)`: the one set of statuses that throttle, for every source.
@Suite struct FetchFailureTests {
    @Test func only429And503Throttle() {
        #expect(FetchFailure.throttles(status: 429))
        #expect(FetchFailure.throttles(status: 503))
        for status in [200, 304, 400, 401, 404, 500, 502, 504] { #expect(!FetchFailure.throttles(status: status)) }
    }
}
