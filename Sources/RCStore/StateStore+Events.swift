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
    public func lastEvent(_ kind: String) throws(StoreError) -> StoredEvent? {
        try Self.wrap { () throws(SQLiteError) in
            try db.query(
                "SELECT id, at, kind, detail FROM events WHERE kind = ? ORDER BY id DESC LIMIT 1", [.text(kind)],
                row: Self.event
            ).first
        }
    }

    /// Appends an event outside any other change (activity messages, daemon notes).
    public func recordEvent(_ kind: String, detail: JSONValue, at now: Timestamp) throws(StoreError) {
        // The reader file holds the last `database-recovered` event only (status shows it).
        try write(readerVisible: kind == "database-recovered") { try appendEvent(kind, at: now, detail: detail) }
    }

    /// The events this store's writes logged since the last call, oldest first (events written by
    /// another process are not among them).
    public func takeCommittedEvents() -> [StoredEvent] {
        defer { committed = [] }
        return committed
    }

    func appendEvent(_ kind: String, at now: Timestamp, detail: JSONValue) throws(SQLiteError) {
        let id = try db.query(
            "INSERT INTO events (at, kind, detail) VALUES (?, ?, ?) RETURNING id",
            [.integer(now.milliseconds), .text(kind), .text(detail.compactText)]
        ) { $0.integer(0) ?? 0 }
        uncommitted.append(StoredEvent(id: id.first ?? 0, at: now, kind: kind, detail: detail))
        try db.run("DELETE FROM events WHERE id <= (SELECT max(id) FROM events) - ?", [.integer(Self.eventLimit)])
    }
}
