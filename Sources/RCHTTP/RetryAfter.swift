import Glibc
import RCCore
import RCSystem

/// The `Retry-After` response header (RFC 9110 §10.2.3): how long a server that answered 429 or
/// 503 asks its clients to wait. Every HTTP user reads it the same way, capped.
public enum RetryAfter {
    /// The longest pause a `Retry-After` can impose. The daemon's throttle persists across restarts,
    /// so a wrong header (a date years ahead) must not silence a device for longer than this.
    public static let maximum: Duration = .seconds(24 * 3600)

    /// `Retry-After` as delay-seconds or an HTTP-date, `nil` when it is neither. (The parser fuzz
    /// targets call it with arbitrary text.)
    public static func parse(_ value: String, now: Timestamp) -> Duration? {
        // Both forms are ASCII. Anything else is refused by its bytes first: trimming and splitting a
        // String compare whole graphemes, and a run of combining marks is one, at a cost in the
        // square of its length (1.2 s for a 96 KB value, which libcurl lets through).
        guard value.utf8.allSatisfy({ $0 < 0x80 }) else { return nil }
        let trimmed = value.trimmingSpaces()
        if let seconds = Int64(trimmed), seconds >= 0 { return min(.seconds(seconds), maximum) }
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
        return at > now ? min(at - now, maximum) : .zero
    }
}

extension HTTPResponse {
    /// This response's `Retry-After`, read at `now`.
    public func retryAfter(now: Timestamp = .now()) -> Duration? {
        header("retry-after").flatMap { RetryAfter.parse($0, now: now) }
    }
}
