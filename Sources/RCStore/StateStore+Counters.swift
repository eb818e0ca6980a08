import RCCore

/// Counters that outlive the process and the bounded event log, for the metrics
/// (`[Report] MetricsFile=`): how many events of each kind the store has logged and how many fetches
/// ended in each way, since the database was made (or since this version first wrote to it). One
/// row of `meta` each (`count:event:<kind>`, `count:fetch:<status>`), bumped in the transaction that
/// logs the event or records the fetch, so a counter never disagrees with what happened. A database
/// moved aside as corrupt starts again from zero, which Prometheus' `rate()` reads as a counter reset.
extension StateStore {
    /// The counters as kept: events by kind (as logged, kinds of other versions included) and
    /// fetches by status. Absent ones are zero.
    public struct Counters: Sendable, Equatable {
        public var events: [String: Int64] = [:]
        public var fetches: [FetchStatus: Int64] = [:]

        public init(events: [String: Int64] = [:], fetches: [FetchStatus: Int64] = [:]) {
            self.events = events
            self.fetches = fetches
        }

        public func events(_ kind: AgentEventKind) -> Int64 { events[kind.rawValue] ?? 0 }
    }

    static let eventCounterPrefix = "count:event:"
    static let fetchCounterPrefix = "count:fetch:"

    public func counters() throws(StoreError) -> Counters {
        try wrap { () throws(SQLiteError) in
            let rows = try db.query("SELECT key, value FROM meta WHERE key >= 'count:' AND key < 'count;'") {
                (key: $0.text(0) ?? "", value: Int64($0.text(1) ?? "") ?? 0)
            }
            var counters = Counters()
            for row in rows {
                if row.key.hasPrefix(Self.eventCounterPrefix) {
                    counters.events[String(row.key.dropFirst(Self.eventCounterPrefix.count))] = row.value
                } else if row.key.hasPrefix(Self.fetchCounterPrefix),
                    let status = FetchStatus(rawValue: String(row.key.dropFirst(Self.fetchCounterPrefix.count)))
                {
                    counters.fetches[status] = row.value
                }
            }
            return counters
        }
    }

    /// Adds one to a counter, in the caller's transaction.
    func bumpCounter(_ key: String) throws(SQLiteError) {
        try db.run(
            """
            INSERT INTO meta (key, value) VALUES (?1, '1')
            ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)
            """, [.text(key)])
    }
}
