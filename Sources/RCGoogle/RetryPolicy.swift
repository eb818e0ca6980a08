import RCCore
import RCHTTP
import RCSystem

/// How a call to a Google API is retried: on 429, 500 and 503 (Google's "retry these, with
/// backoff" statuses) and on transfers that got no answer (refused, reset, timed out), after
/// exponential backoff with jitter or the server's `Retry-After` (seconds or an HTTP date), within
/// a bounded number of attempts and a bounded total time. Other statuses are answers, returned at
/// once. The sleeper, randomness and clock are injectable so tests need no real multi-second waits.
public struct RetryPolicy: Sendable {
    /// At most this many requests in all, the first included.
    public var attempts = 5
    /// The first backoff (doubling on each failure, ±50% jitter), before any cap.
    public var initialDelay: Duration = .milliseconds(500)
    /// No single wait is longer: a `Retry-After` beyond it ends the retries instead (as the Admin
    /// SDKs do), since waiting it out is the operator's decision.
    public var maximumDelay: Duration = .seconds(60)
    /// The retries stop once the next wait would end after this much time since the first attempt.
    public var totalTime: Duration = .seconds(180)
    /// Waits `duration`; throws when the task is cancelled.
    public var sleep: @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    /// A number in 0..<1 for the jitter.
    public var random: @Sendable () -> Double = { Double.random(in: 0..<1) }
    /// The wall clock, for `Retry-After` dates.
    public var now: @Sendable () -> Timestamp = { Timestamp.now() }

    public init() {}

    /// The statuses that mean "try again later".
    public static let retryableStatuses: Set<Int> = [429, 500, 503]

    /// The backoff after the `failures`-th failure in a row (1-based), ±50% jitter, at most
    /// ``maximumDelay``.
    func backoff(failures: Int) -> Duration {
        min(
            Jitter.halfAround(
                Backoff.step(failures: failures, base: initialDelay, cap: maximumDelay), random: random()),
            maximumDelay)
    }

    /// Sends `request` until it gets an answer that is not a retryable status, or the attempts or
    /// the time run out. Returns that answer, whatever its status; a retryable status or a transfer
    /// failure that is still there at the end is thrown, with Google's words and how it gave up.
    /// `call` names the request in errors.
    func send(_ request: HTTPRequest, call: String) async throws(GoogleError) -> HTTPResponse {
        let started = ContinuousClock.now
        var failures = 0
        while true {
            let outcome: Result<HTTPResponse, HTTPError>
            do { outcome = .success(try await HTTPClient.send(request)) } catch { outcome = .failure(error) }
            failures += 1
            let wait: Duration
            switch outcome {
            case let .success(response) where !Self.retryableStatuses.contains(response.status):
                return response
            case let .success(response):
                wait = max(response.retryAfter(now: now()) ?? backoff(failures: failures), .zero)
                if let reason = giveUp(failures: failures, wait: wait, since: started) {
                    throw GoogleError(response: response, call: call, note: reason)
                }
            case let .failure(error):
                let message = "\(error.message) (\(error.kind.rawValue))"
                guard Self.retryableKinds.contains(error.kind) else { throw GoogleError(call, message) }
                wait = backoff(failures: failures)
                if let reason = giveUp(failures: failures, wait: wait, since: started) {
                    throw GoogleError(call, "\(message), \(reason)")
                }
            }
            do { try await sleep(wait) } catch { throw GoogleError(call, "cancelled while waiting to retry") }
        }
    }

    /// Transfer failures worth another attempt: no connection, a reset, a timeout. A name that does
    /// not resolve, a TLS failure or an oversized answer will not change by waiting. (A timed-out
    /// FCM send may have been delivered and is sent again: Google's guidance for FCM is to retry,
    /// and a stale ping twice costs a device one more fetch at most.)
    static let retryableKinds: Set<HTTPError.Kind> = [.connect, .timeout, .transport]

    /// Why no further attempt is made, or `nil` to wait `wait` and try again.
    private func giveUp(failures: Int, wait: Duration, since started: ContinuousClock.Instant) -> String? {
        if failures >= attempts { return "gave up after \(failures) attempts" }
        if wait > maximumDelay {
            return "the server asks to wait \(DurationText.format(wait)), longer than the "
                + "\(DurationText.format(maximumDelay)) this tool waits; gave up after \(failures) attempts"
        }
        if ContinuousClock.now - started + wait > totalTime {
            return "gave up after \(failures) attempts in \(DurationText.format(ContinuousClock.now - started))"
        }
        return nil
    }
}
