import RCCore

/// The small values the daemon's channels keep across restarts, each named once here instead of
/// a string spelt by its reader and its writer. The names are the rows' keys in `meta` (after
/// `note:`): renaming a case's raw value would forget what older databases hold.
public enum StateNote: String, Sendable, CaseIterable {
    /// The full topic of the last device report (a new topic clears the retained one left there).
    case reportTopic = "report.topic"
    /// The MQTT push channel's topics, one a line (topics no longer wanted are unsubscribed).
    case mqttTopics = "mqtt.topics"
    /// Failed realtime stream connections in a row (the backoff survives a restart).
    case realtimeFailures = "realtime.failures"
    /// When the realtime stream may connect again, in Unix milliseconds.
    case realtimeRetryAt = "realtime.retryAt"
}

extension StateStore {
    /// The value of `note`, `nil` when none is kept.
    public func note(_ note: StateNote) throws(StoreError) -> String? {
        try wrap { () throws(SQLiteError) in
            try db.query("SELECT value FROM meta WHERE key = ?", [.text("note:" + note.rawValue)]) { $0.text(0) }
                .first ?? nil
        }
    }

    /// Keeps `value` (cut to ``StoredText/maximumNoteBytes``) for `note`; `nil` forgets it.
    public func setNote(_ note: StateNote, _ value: String?) throws(StoreError) {
        try write(readerVisible: false) {
            if let value {
                try db.run(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                    [.text("note:" + note.rawValue), .text(StoredText.note(value))])
            } else {
                try db.run("DELETE FROM meta WHERE key = ?", [.text("note:" + note.rawValue)])
            }
        }
    }
}
