import RCCore

/// Live Activities in the `activities` table: applying a message (the rules, the row and the
/// event in one transaction), listing them, ending those past ActivityKit's 8 hours, removing those
/// past their dismissal date or on request.
extension StateStore {
    /// The most activities a device keeps, ended ones waiting for their dismissal included. A start
    /// for a new id beyond it removes the ended activity due first (event `activity-removed`, reason
    /// `evicted: ...`), or is refused when none has ended. A kiosk shows a few dozen at most; 128
    /// rows of at most about 10 KB each (content state and attributes 4 KB each, alert, id) bound
    /// the table near 1.3 MB.
    public static let maximumActivities = 128

    /// How many removed activities are remembered with their last timestamp, the most recently
    /// removed first. A message for a removed id that is not newer than that is ignored: a retained
    /// MQTT start (delivered again at every reconnect) or a replay must not bring an activity back.
    public static let maximumRemembered = 1024

    /// Applies `message` to the activity it names, as ``LiveActivityRules`` decide, in one
    /// transaction: the row changes and its `activity-*` event is logged together or not at all.
    /// Ignored and refused messages change nothing and log nothing.
    @discardableResult
    public func applyActivity(_ message: LiveActivityMessage, now: Timestamp) throws(StoreError)
        -> LiveActivityRules.Outcome
    {
        try write { () throws in
            // Read inside the write transaction: no other writer can apply a message to the same
            // activity between this read and the write below.
            // A message dated far ahead is refused before anything else: it must not evict an ended
            // activity to make room for a start that is then refused anyway.
            if let refusal = LiveActivityRules.clockRefusal(message, now: now) { return .refused(refusal) }
            let existing = try storedActivity(id: message.token).map { $0.at(now) }
            // A remembered timestamp itself far ahead (kept by an older release, which took any) blocks nothing.
            if existing == nil, let removed = try removedTimestamp(id: message.token), message.timestamp <= removed,
                !LiveActivityRules.isTooFarAhead(removed, now: now)
            {
                return .ignored(
                    "activity \(TextEscaping.logLine(message.token)) was removed; timestamp \(message.timestamp) "
                        + "is not newer than its last, \(removed)")
            }
            // Every push channel is open to whoever can publish: a flood of starts with distinct ids
            // must not grow the table (and each list, watch line and hook run) without end. At the
            // bound, a start for a new id takes the place of the ended activity due for removal
            // first (it was only waiting for its dismissal date); with none ended, it is refused.
            if existing == nil, message.event == .start {
                let count = try db.query("SELECT count(*) FROM activities") { $0.integer(0) ?? 0 }.first ?? 0
                if count >= Self.maximumActivities {
                    let ended = try db.query(
                        """
                        SELECT \(Self.activityColumns) FROM activities WHERE ended_at IS NOT NULL
                        ORDER BY dismiss_at, id LIMIT 1
                        """, row: Self.activityRow)
                    guard let evicted = try ended.first?.activity().at(now) else {
                        return .refused(
                            "start for \(TextEscaping.logLine(message.token)): the device already keeps "
                                + "\(count) activities, none ended, at most \(Self.maximumActivities)")
                    }
                    try forget(evicted, now: now)
                    try appendEvent(
                        .activityRemoved, at: now,
                        detail: Self.removal(evicted, reason: "evicted: at most \(Self.maximumActivities) activities"))
                }
            }
            let outcome = LiveActivityRules.apply(message, to: existing, now: now)
            guard let activity = outcome.activity, let kind = outcome.eventKind else { return outcome }
            // An end whose dismissal date has passed leaves no row behind, only its event.
            if case .removed = outcome {
                try forget(activity, now: now)
                try appendEvent(kind, at: now, detail: Self.removal(activity, reason: "dismissal-date passed"))
            } else {
                try save(activity)
                try appendEvent(kind, at: now, detail: activity.json)
            }
            return outcome
        }
    }

    /// Every stored activity, ended ones included, with its state at `now`; oldest start first.
    /// The state is not stored: stale follows from the clock, so it is computed on each read.
    public func activities(now: Timestamp) throws(StoreError) -> [LiveActivity] {
        let rows = try Self.wrap { () throws(SQLiteError) -> [ActivityRow] in
            guard try hasActivitiesTable() else { return [] }
            return try db.query(
                "SELECT \(Self.activityColumns) FROM activities ORDER BY started_at, id", row: Self.activityRow)
        }
        var activities: [LiveActivity] = []
        for row in rows { activities.append(try row.activity().at(now)) }
        return activities
    }

    /// The activity `id`, with its state at `now`, or `nil` when there is none.
    public func activity(id: String, now: Timestamp) throws(StoreError) -> LiveActivity? {
        try storedActivity(id: id)?.at(now)
    }

    /// What ``expireActivities(now:)`` did: the ids it ended and those it removed, each sorted.
    public struct Expiry: Sendable, Equatable {
        public var ended: [String] = []
        public var removed: [String] = []

        public init(ended: [String] = [], removed: [String] = []) {
            self.ended = ended
            self.removed = removed
        }
    }

    /// The device's own steps, due at `now`, in one transaction: ends every activity running for
    /// ``LiveActivityRules/maximumActive`` (event `activity-ended`, as if an end had come then) and
    /// removes every ended one whose dismissal time has come (event `activity-removed`); one ended
    /// so long ago that its removal is due too is only removed.
    @discardableResult
    public func expireActivities(now: Timestamp) throws(StoreError) -> Expiry {
        try write { () throws in
            let rows = try db.query(
                """
                SELECT \(Self.activityColumns) FROM activities
                WHERE dismiss_at <= ?1 OR ended_at <= ?3 OR (ended_at IS NULL AND started_at <= ?2) ORDER BY id
                """,
                [
                    .integer(now.milliseconds),
                    .integer(now.milliseconds - LiveActivityRules.maximumActive.milliseconds),
                    .integer(now.milliseconds - LiveActivityRules.maximumDismissal.milliseconds),
                ],
                row: Self.activityRow)
            var expiry = Expiry()
            for row in rows {
                let activity = try row.activity().at(now)
                switch LiveActivityRules.expire(activity, now: now) {
                case let .ended(ended)?:
                    try save(ended)
                    try appendEvent(.activityEnded, at: now, detail: ended.json)
                    expiry.ended.append(ended.id)
                case let .removed(ended)?:
                    try forget(ended, now: now)
                    try appendEvent(
                        .activityRemoved, at: now, detail: Self.removal(ended, reason: "ended 8 h after its start"))
                    expiry.removed.append(ended.id)
                default:
                    guard activity.endedAt != nil, LiveActivityRules.deadline(of: activity) <= now else { continue }
                    try forget(activity, now: now)
                    try appendEvent(.activityRemoved, at: now, detail: Self.removal(activity, reason: "dismissed"))
                    expiry.removed.append(activity.id)
                }
            }
            return expiry
        }
    }

    /// Removes the activity `id` at once, whatever its state (`rcagent activity remove`), logging an
    /// `activity-removed` event; its last timestamp is remembered like any removal's, so a replay of
    /// its start does not bring it back. Returns the activity as it was, or `nil` when there is none.
    public func removeActivity(id: String, now: Timestamp, reason: String) throws(StoreError) -> LiveActivity? {
        try write { () throws in
            guard let activity = try storedActivity(id: id)?.at(now) else { return nil }
            try forget(activity, now: now)
            try appendEvent(.activityRemoved, at: now, detail: Self.removal(activity, reason: reason))
            return activity
        }
    }

    /// When the device next has something to do without a message: the earliest removal of an ended
    /// activity or end of a running one (``LiveActivityRules/deadline(of:)``); `nil` with none stored.
    public func nextActivityDeadline() throws(StoreError) -> Timestamp? {
        try Self.wrap { () throws(SQLiteError) in
            guard try hasActivitiesTable() else { return nil }
            return try db.query(
                """
                SELECT min(CASE WHEN ended_at IS NULL THEN started_at + ?1
                    ELSE min(coalesce(dismiss_at, ended_at + ?2), ended_at + ?2) END) FROM activities
                """,
                [
                    .integer(LiveActivityRules.maximumActive.milliseconds),
                    .integer(LiveActivityRules.maximumDismissal.milliseconds),
                ]
            ) { $0.integer(0).map(Timestamp.init) }.first ?? nil
        }
    }

    // MARK: - Rows

    /// Deletes `activity`'s row and remembers its last timestamp, keeping the newest
    /// ``maximumRemembered`` removals.
    private func forget(_ activity: LiveActivity, now: Timestamp) throws(SQLiteError) {
        try db.run("DELETE FROM activities WHERE id = ?", [.text(activity.id)])
        try db.run(
            "INSERT OR REPLACE INTO removed_activities (id, timestamp, removed_at) VALUES (?, ?, ?)",
            [.text(activity.id), .integer(activity.timestamp), .integer(now.milliseconds)])
        try db.run(
            """
            DELETE FROM removed_activities WHERE id IN
                (SELECT id FROM removed_activities ORDER BY removed_at DESC, id LIMIT -1 OFFSET ?)
            """, [.integer(Int64(Self.maximumRemembered))])
    }

    /// The last timestamp of the removed activity `id`, if it is remembered.
    private func removedTimestamp(id: String) throws(SQLiteError) -> Int64? {
        try db.query("SELECT timestamp FROM removed_activities WHERE id = ?", [.text(id)]) { $0.integer(0) }.first
            ?? nil
    }

    private static let activityColumns = """
        id, attributes_type, attributes, content_state, alert, timestamp, started_at, updated_at, ended_at, \
        stale_at, dismiss_at
        """

    /// `{"id", "reason", "activity"}`: what a removal event says (the activity as it was last).
    private static func removal(_ activity: LiveActivity, reason: String) -> JSONValue {
        .object([("activity", activity.json), ("id", .string(activity.id)), ("reason", .string(reason))])
    }

    /// `false` in a database the daemon has not migrated yet, read by a newer CLI (`openForReading`
    /// never migrates): it has no activities, which is no error.
    private func hasActivitiesTable() throws(SQLiteError) -> Bool {
        try !db.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'activities'") { _ in true }.isEmpty
    }

    private func storedActivity(id: String) throws(StoreError) -> LiveActivity? {
        let rows = try Self.wrap { () throws(SQLiteError) -> [ActivityRow] in
            guard try hasActivitiesTable() else { return [] }
            return try db.query(
                "SELECT \(Self.activityColumns) FROM activities WHERE id = ?", [.text(id)], row: Self.activityRow)
        }
        return try rows.first?.activity()
    }

    /// Writes the whole row: a start replaces an ended activity of the same id, an update
    /// rewrites what changed and what did not alike (one activity is a few kilobytes at most).
    private func save(_ activity: LiveActivity) throws(SQLiteError) {
        func time(_ t: Timestamp?) -> SQLValue { t.map { .integer($0.milliseconds) } ?? .null }
        try db.run(
            """
            INSERT OR REPLACE INTO activities (\(Self.activityColumns))
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .text(activity.id), .text(activity.attributesType), .text(activity.attributes.compactText),
                .text(activity.contentState.compactText), activity.alert.map { .text($0.json.compactText) } ?? .null,
                .integer(activity.timestamp), time(activity.startedAt), time(activity.updatedAt),
                time(activity.endedAt), time(activity.staleAt), time(activity.dismissAt),
            ])
    }

    /// One row's columns, copied out before the statement moves on; decoded after.
    private struct ActivityRow {
        var id: String
        var attributesType: String
        var attributes: String
        var contentState: String
        var alert: String?
        var timestamp: Int64
        var startedAt: Int64
        var updatedAt: Int64
        var endedAt: Int64?
        var staleAt: Int64?
        var dismissAt: Int64?

        /// The activity, its state still to be computed for a clock. JSON this store wrote that no
        /// longer parses is damage, reported as such rather than shown as an empty object.
        func activity() throws(StoreError) -> LiveActivity {
            func json(_ text: String, _ column: String) throws(StoreError) -> JSONValue {
                do { return try JSONValue.parse(text) } catch {
                    throw .integrityCheckFailed("activity \(TextEscaping.logLine(id)): \(column): \(error)")
                }
            }
            var alert: LiveActivityMessage.Alert?
            if let text = self.alert {
                let value = try json(text, "alert")
                guard let title = value["title"]?.stringValue, let body = value["body"]?.stringValue else {
                    throw .integrityCheckFailed("activity \(TextEscaping.logLine(id)): alert: no title or body")
                }
                alert = .init(title: title, body: body, sound: value["sound"]?.stringValue)
            }
            return LiveActivity(
                id: id, state: .active, attributesType: attributesType,
                attributes: try json(attributes, "attributes"), contentState: try json(contentState, "content_state"),
                alert: alert, timestamp: timestamp, startedAt: Timestamp(milliseconds: startedAt),
                updatedAt: Timestamp(milliseconds: updatedAt), endedAt: endedAt.map(Timestamp.init),
                staleAt: staleAt.map(Timestamp.init), dismissAt: dismissAt.map(Timestamp.init))
        }
    }

    private static func activityRow(_ row: Row) -> ActivityRow {
        ActivityRow(
            id: row.text(0) ?? "", attributesType: row.text(1) ?? "", attributes: row.text(2) ?? "{}",
            contentState: row.text(3) ?? "{}", alert: row.text(4), timestamp: row.integer(5) ?? 0,
            startedAt: row.integer(6) ?? 0, updatedAt: row.integer(7) ?? 0, endedAt: row.integer(8),
            staleAt: row.integer(9), dismissAt: row.integer(10))
    }
}
