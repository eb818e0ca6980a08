/// Decides when a subscription has delivered the broker's retained reports, which MQTT never says.
///
/// After the SUBACKs the collector publishes a non-retained message to a topic of its own under
/// the report topic (the marker). A broker that keeps the order of one client's traffic, as
/// mosquitto does, queues the retained messages before the marker, so the marker's arrival means
/// "all delivered"; a short settle period after it (``settle``, at most ``settleLimit``) covers
/// brokers that do not keep that order exactly (a cluster whose nodes hold the retained store).
/// When the marker never comes (an ACL that refuses the publish, a broker that drops it), the set
/// counts as delivered once no message has come for ``quiet``. The caller bounds it all with its
/// own timeout. Pure: the instants are handed in, so tests need no broker and no clock.
struct RetainedSetProgress: Sendable {
    typealias Instant = ContinuousClock.Instant

    var settle: Duration = .milliseconds(250)
    var settleLimit: Duration = .seconds(2)
    var quiet: Duration = .seconds(2)

    /// When the last SUBACK came: the retained messages start after it.
    private(set) var subscribedAt: Instant?
    private(set) var markerAt: Instant?
    private(set) var lastMessageAt: Instant?

    var hasMarker: Bool { markerAt != nil }

    mutating func subscribed(at instant: Instant) { subscribedAt = instant }

    mutating func message(at instant: Instant) { lastMessageAt = instant }

    mutating func marker(at instant: Instant) {
        if markerAt == nil { markerAt = instant }
    }

    /// Whether the retained set counts as delivered at `now`.
    func isComplete(at now: Instant) -> Bool {
        guard let subscribedAt else { return false }
        let lastActivity = max(subscribedAt, lastMessageAt ?? subscribedAt)
        if let markerAt {
            return now - max(markerAt, lastActivity) >= settle || now - markerAt >= settleLimit
        }
        return now - lastActivity >= quiet
    }
}
