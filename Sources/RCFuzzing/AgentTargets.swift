import RCCore
import RCFirebase
import RCHTTP

/// What the network modules read from servers (RCFirebase, RCHTTP): the realtime stream,
/// `Retry-After`, the installation token.
enum AgentTargets {
    static let all = [realtimeStream, retryAfter, installationToken]

    /// `RealtimeStreamFramer` over Firebase's realtime invalidation stream.
    static let realtimeStream = FuzzTarget(
        "realtime-stream", checkRealtimeStream,
        """
        realtime stream bytes: framing is the same however the transfer splits the bytes; every frame is a \
        {...} slice of the stream, in order; the held-back buffer stays bounded
        """)

    private static func checkRealtimeStream(_ check: Checker, _ bytes: [UInt8]) throws(PropertyViolation) -> FuzzOutcome
    {
        var whole = RealtimeStreamFramer()
        let frames = whole.append(bytes)
        try check.require(whole.bufferedCount <= RealtimeStreamFramer.maximumBuffered, "buffer unbounded")
        // The same bytes in chunks of 1, 2, 3 ... bytes (cycling from a size the input picks).
        var chunked = RealtimeStreamFramer()
        var pieces: [[UInt8]] = []
        var offset = 0
        var size = Int(bytes.first ?? 0) % 7 + 1
        while offset < bytes.count {
            let end = min(offset + size, bytes.count)
            pieces += chunked.append(Array(bytes[offset..<end]))
            offset = end
            size = size % 13 + 1
        }
        try check.require(pieces == frames, "\(frames.count) frames whole, \(pieces.count) in chunks")
        var searchFrom = 0
        var accepted = false
        for frame in frames {
            try check.require(frame.first == UInt8(ascii: "{") && frame.last == UInt8(ascii: "}"), "frame not {...}")
            guard let at = firstRange(of: frame, in: bytes, from: searchFrom) else {
                try check.require(false, "a frame that is not a slice of the stream, in order")
                break
            }
            searchFrom = at + frame.count
            // What the listener reads from each message.
            guard let json = try? JSONValue.parse(frame) else { continue }
            accepted = true
            try JSONTargets.requireRoundTrip(json, check)
            _ = json["featureDisabled"]
            _ = json["latestTemplateVersionNumber"]
        }
        return accepted ? .accepted : .rejected
    }

    static let now = Timestamp(milliseconds: 1_800_000_000_000)

    /// `RetryAfter.parse`: delay-seconds or an HTTP-date.
    static let retryAfter = FuzzTarget(
        "retry-after", checkRetryAfter,
        """
        Retry-After header value: a delay is never negative, never beyond the cap (so the throttle time \
        cannot overflow), and delay-seconds mean exactly that many seconds
        """)

    private static func checkRetryAfter(_ check: Checker, _ bytes: [UInt8]) throws(PropertyViolation) -> FuzzOutcome {
        let value = text(bytes)
        guard let delay = RetryAfter.parse(value, now: now) else { return .rejected }
        try check.require(delay >= .zero, "negative delay \(delay)")
        try check.require(delay <= RetryAfter.maximum, "delay \(delay) over the cap")
        let trimmed = value.trimmingSpaces()
        if let seconds = Int64(trimmed), seconds >= 0 {
            try check.require(
                delay == min(.seconds(seconds), RetryAfter.maximum), "\(seconds) s read as \(delay)")
        }
        _ = now + delay
        return .accepted
    }

    /// `InstallationClient.token(from:)`: the auth token of a Firebase Installations response.
    static let installationToken = FuzzTarget(
        "installation-token", checkInstallationToken,
        """
        Firebase Installations token response: errors name Firebase Installations; an accepted token expires \
        after now and within the cap
        """)

    private static func checkInstallationToken(_ check: Checker, _ bytes: [UInt8]) throws(PropertyViolation)
        -> FuzzOutcome
    {
        let token: String
        let expiresAt: Timestamp
        do { (token, expiresAt) = try InstallationClient.token(from: bytes, now: now) } catch {
            try check.requireNamed(error, prefix: "Firebase Installations: ")
            return .rejected
        }
        try check.require(
            (try? JSONValue.parse(bytes))?["token"]?.stringValue == token, "token \(token) is not the response's")
        try check.require(
            expiresAt >= now && expiresAt <= now + InstallationClient.maximumTokenLifetime,
            "token expires at \(expiresAt.milliseconds), now is \(now.milliseconds)")
        return .accepted
    }

    private static func firstRange(of needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard needle.count <= haystack.count else { return nil }
        var index = start
        while index + needle.count <= haystack.count {
            if haystack[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}
