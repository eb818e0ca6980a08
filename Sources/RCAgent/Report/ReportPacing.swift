/// When the device report goes out after its state changed: a short settle after the first change
/// (the rest of a burst joins it: a round that fetches, activates and clears the stale flag is one
/// report, not three) and at most one report per `interval`, so a device whose state churns (20
/// pings, 20 activities) publishes a handful of reports, never a storm. The report is made when
/// the deadline comes, from the state as it is then, so the last one always carries the latest
/// state. A plain value with no clock of its own: the reporter passes `now` in, tests drive it
/// with made-up instants.
struct ReportPacing {
    typealias Instant = ContinuousClock.Instant

    var settle: Duration = .milliseconds(250)
    var interval: Duration = .seconds(1)
    /// When the report is due; `nil` while nothing changed since the last one.
    private(set) var due: Instant?
    private var lastPublished: Instant?

    /// The state changed at `now`: the report is due after the settle, and not before `interval`
    /// has passed since the last one. A change while one is due changes nothing.
    mutating func changed(at now: Instant) {
        guard due == nil else { return }
        let earliest = lastPublished.map { $0 + interval } ?? now
        due = max(now + settle, earliest)
    }

    func isDue(at now: Instant) -> Bool { due.map { $0 <= now } ?? false }

    /// The report due turned out the same as the last one: nothing goes out, and nothing is due.
    mutating func unchanged() { due = nil }

    /// A report went out at `now` (due or not: a reconnect publishes at once): the next waits.
    mutating func published(at now: Instant) {
        lastPublished = now
        due = nil
    }
}
