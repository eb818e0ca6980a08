import RCCore

/// The bounded event log (`watch`, `status`, the hooks): reading it, appending to it inside a
/// write, and handing the writer what its committed transactions logged.
extension StateStore {
    /// Events with an id above `id`, oldest first.
    public func events(after id: Int64 = 0, limit: Int = 1_000) throws(StoreError) -> [StoredEvent] {
        try Self.wrap { () throws(SQLiteError) in
            try db.query(
                "SELECT id, at, kind, detail FROM events WHERE id > ? ORDER BY id LIMIT ?",
                [.integer(id), .integer(Int64(limit))], row: Self.event)
        }
    }

    static func event(_ row: Row) -> StoredEvent {
        StoredEvent(
            id: row.integer(0) ?? 0, at: Timestamp(milliseconds: row.integer(1) ?? 0), kind: row.text(2) ?? "",
            detail: (try? JSONValue.parse(row.text(3) ?? "{}")) ?? .object([]))
    }

    /// The id of the newest event (0 when there is none).
    public func lastEventId() throws(StoreError) -> Int64 {
        try Self.wrap { () throws(SQLiteError) in
            try db.query("SELECT coalesce(max(id), 0) FROM events", [], row: { $0.integer(0) ?? 0 }).first ?? 0
        }
    }

    /// The newest event of `kind` the bounded log still holds.
    public func lastEvent(_ kind: AgentEventKind) throws(StoreError) -> StoredEvent? {
        try Self.wrap { () throws(SQLiteError) in
            try db.query(
                "SELECT id, at, kind, detail FROM events WHERE kind = ? ORDER BY id DESC LIMIT 1",
                [.text(kind.rawValue)],
                row: Self.event
            ).first
        }
    }

    /// Appends an event outside any other change (activity messages, daemon notes).
    public func recordEvent(_ kind: AgentEventKind, detail: JSONValue, at now: Timestamp) throws(StoreError) {
        // The reader file holds the last `database-recovered` event only (status shows it).
        try write(readerVisible: kind == .databaseRecovered) { try appendEvent(kind, at: now, detail: detail) }
    }

    /// The events this store's writes logged since the last call, oldest first (events written by
    /// another process are not among them).
    public func takeCommittedEvents() -> [StoredEvent] {
        defer { committed = [] }
        return committed
    }

    /// Appends an event, then trims the log to ``eventLimit`` events and ``eventBytesLimit`` bytes,
    /// oldest first, in the caller's transaction: the log never holds more, whatever the details
    /// weigh (the newest event stays, even alone over the byte bound).
    func appendEvent(_ kind: AgentEventKind, at now: Timestamp, detail: JSONValue) throws(SQLiteError) {
        let text = detail.compactText
        let size = Int64(kind.rawValue.utf8.count + text.utf8.count)
        let id = try db.query(
            "INSERT INTO events (at, kind, detail, size) VALUES (?, ?, ?, ?) RETURNING id",
            [.integer(now.milliseconds), .text(kind.rawValue), .text(text), .integer(size)]
        ) { $0.integer(0) ?? 0 }
        uncommitted.append(StoredEvent(id: id.first ?? 0, at: now, kind: kind.rawValue, detail: detail))
        try bumpCounter(Self.eventCounterPrefix + kind.rawValue)
        try db.run("DELETE FROM events WHERE id <= (SELECT max(id) FROM events) - ?", [.integer(Self.eventLimit)])
        // The newest events whose sizes add up to the bound stay, and the newest one whatever its size.
        // Both reads use the covering index `events_size` (id order, sizes only), never a detail; the
        // walk runs only when the log is over the bound. (A window function over the same rows was ten
        // times the cost of the plain sum.)
        let total = try db.query("SELECT coalesce(sum(size), 0) FROM events") { $0.integer(0) ?? 0 }.first ?? 0
        guard total > Self.eventBytesLimit else { return }
        let newestFirst = try db.query("SELECT id, size FROM events ORDER BY id DESC") {
            (id: $0.integer(0) ?? 0, size: $0.integer(1) ?? 0)
        }
        var kept: Int64 = 0
        for (index, event) in newestFirst.enumerated() {
            kept += event.size
            if index > 0, kept > Self.eventBytesLimit {
                try db.run("DELETE FROM events WHERE id <= ?", [.integer(event.id)])
                return
            }
        }
    }
}
