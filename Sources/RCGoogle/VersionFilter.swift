import RCCore

/// Which template versions `listVersions` returns besides the newest-first paging: its query
/// parameters `endVersionNumber`, `startTime` and `endTime` (Remote Config REST reference,
/// projects.remoteConfig.listVersions). Times go out as RFC 3339 UTC ("Zulu"), as the API wants them.
public struct VersionFilter: Sendable, Equatable {
    /// The newest version number to list (`endVersionNumber`, greater than 0).
    public var endVersion: Int64?
    /// The earliest update time listed (`startTime`): versions updated before it are left out.
    public var since: Timestamp?
    /// The update time versions must be before (`endTime`): those updated at or after it are left out.
    public var until: Timestamp?

    public init(endVersion: Int64? = nil, since: Timestamp? = nil, until: Timestamp? = nil) {
        self.endVersion = endVersion
        self.since = since
        self.until = until
    }

    /// The query parameters, each as `&name=value` (empty without a filter).
    var query: String {
        var text = ""
        if let endVersion { text += "&endVersionNumber=\(endVersion)" }
        if let since { text += "&startTime=\(TextEscaping.percentEncoded(Self.zulu(since)))" }
        if let until { text += "&endTime=\(TextEscaping.percentEncoded(Self.zulu(until)))" }
        return text
    }

    /// `2026-12-01T08:00:00Z`, with `.123` before the `Z` when there are milliseconds.
    static func zulu(_ time: Timestamp) -> String {
        let millis = time.milliseconds - time.milliseconds.floorDivided(by: 1_000) * 1_000
        guard millis != 0 else { return time.iso8601 }
        let digits = String(millis)
        return String(time.iso8601.dropLast()) + "." + String(repeating: "0", count: 3 - digits.count) + digits + "Z"
    }
}
