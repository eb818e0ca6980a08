import RCCore
import RCStore

/// The words the agent uses about itself: the `STATUS=` line systemd shows, and the small
/// formats its log lines share.
enum StatusText {
    /// The `STATUS=` line: what is active or stale, whether the last fetch failed, what awaits
    /// activation and when the next fetch is (`nextFetch` is `nil` without a source).
    static func line(_ status: StoreStatus, nextFetch: Timestamp?) -> String {
        var text: String
        if status.stale.isSet {
            text = "Stale since \(clock(status.stale.since))"
        } else {
            text = "Template \(status.active.templateVersion ?? "-") active, \(status.active.keys) keys"
        }
        if let error = status.lastError, status.lastStatus == .failure {
            text += "; last fetch failed (\(error))"
        }
        if status.pending { text += "; fetched template \(status.fetched.templateVersion ?? "-") awaits activation" }
        text += nextFetch.map { "; next fetch \(clock($0))" } ?? "; no source configured"
        return text
    }

    /// `HH:MM:SS UTC`, for status lines.
    static func clock(_ t: Timestamp?) -> String {
        guard let t else { return "-" }
        return String(t.iso8601.dropFirst(11).prefix(8)) + " UTC"
    }

    /// `12.3 ms`.
    static func milliseconds(_ duration: Duration) -> String {
        let micros = duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000
        return "\(micros / 1_000).\(String(micros % 1_000 / 100)) ms"
    }

    /// `3 key(s) changed: a, b, c`, the first ten keys at most.
    static func describe(_ keys: [String]) -> String {
        keys.isEmpty
            ? "no keys changed"
            : "\(keys.count) key(s) changed: " + keys.prefix(10).joined(separator: ", ")
                + (keys.count > 10 ? ", ..." : "")
    }
}
