/// The sizes the state database keeps of texts that come from outside (a push's `CONFIG_STATE`,
/// `mark-stale --reason`, a server's error body, a note): each is cut to its limit at a Unicode
/// scalar boundary, `…` marking the cut, so that no sender decides how much disk one message takes.
/// docs/security.md (LIMITS) lists them.
public enum StoredText {
    /// The stale flag's reason (status, the `stale-set` event).
    public static let maximumReasonBytes = 256
    /// A failed fetch's error (status, the `fetch-failed` event).
    public static let maximumErrorBytes = 1_024
    /// A note the daemon keeps across restarts (push topics, realtime backoff).
    public static let maximumNoteBytes = 4_096

    public static func reason(_ text: String) -> String {
        TextEscaping.truncated(text, maxBytes: maximumReasonBytes)
    }

    public static func error(_ text: String) -> String {
        TextEscaping.truncated(text, maxBytes: maximumErrorBytes)
    }

    public static func note(_ text: String) -> String {
        TextEscaping.truncated(text, maxBytes: maximumNoteBytes)
    }
}
