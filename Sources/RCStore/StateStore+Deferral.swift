import RCCore

/// The deferred activation (safe activation): the pending snapshot waits for a maintenance window or
/// the end of a hold. One row of `meta`, copied to the reader file, so `status` shows it without the
/// daemon and a restarted daemon takes the wait up again.
extension StateStore {
    static let deferredKey = "activation.deferred"

    /// The activation that waits, `nil` when none does (or the row is unreadable: the daemon writes
    /// it again on its next look).
    public func deferredActivation() throws(StoreError) -> DeferredActivation? {
        try Self.wrap { () throws(SQLiteError) in
            let text =
                try db.query("SELECT value FROM meta WHERE key = ?", [.text(Self.deferredKey)]) { $0.text(0) }
                .first ?? nil
            return text.flatMap { try? JSONValue.parse($0) }.flatMap(DeferredActivation.init(json:))
        }
    }

    /// Keeps `deferred` (`nil`: nothing waits any more). With `announce`, logs the
    /// `activation-deferred` event in the same transaction (`watch` and the hooks hear of it).
    public func setDeferredActivation(_ deferred: DeferredActivation?, announce: Bool, at now: Timestamp)
        throws(StoreError)
    {
        try write {
            if let deferred {
                try db.run(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                    [.text(Self.deferredKey), .text(deferred.json.compactText)])
                if announce { try appendEvent(.activationDeferred, at: now, detail: deferred.json) }
            } else {
                try db.run("DELETE FROM meta WHERE key = ?", [.text(Self.deferredKey)])
            }
        }
    }
}
