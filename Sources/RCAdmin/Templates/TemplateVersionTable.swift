import RCCore

/// The output of `rcadmin template versions`: the `Version` objects of `listVersions` (newest
/// first, as the API returns them) as an aligned table for a terminal, or passed through as JSON.
public enum TemplateVersionTable {
    static let headers = ["VERSION", "UPDATED", "USER", "ORIGIN", "TYPE", "DESCRIPTION"]

    /// One row per version: number, update time (UTC, to the second), user email, origin and type
    /// (`ROLLBACK from N` for a rollback), description. Columns are padded to their widest cell
    /// except the last; every cell is escaped for the terminal and long descriptions are elided.
    /// Missing fields show as `-`.
    public static func text(_ versions: [JSONValue]) -> String {
        let rows = [headers] + versions.map(row)
        var widths = [Int](repeating: 0, count: headers.count)
        for row in rows {
            for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.unicodeScalars.count) }
        }
        var out = ""
        for row in rows {
            var line = ""
            for (column, cell) in row.enumerated() {
                line += cell
                if column < row.count - 1 {
                    line += String(repeating: " ", count: widths[column] - cell.unicodeScalars.count + 2)
                }
            }
            while line.hasSuffix(" ") { line.removeLast() }
            out += line + "\n"
        }
        return out
    }

    /// `--json`: the versions exactly as the API returned them, as one JSON array.
    public static func json(_ versions: [JSONValue]) -> String { JSONValue.array(versions).compactText + "\n" }

    static func row(_ version: JSONValue) -> [String] {
        func cell(_ value: JSONValue?) -> String {
            switch value {
            case nil, .null?: return "-"
            case let .string(s)? where s.isEmpty: return "-"
            case let .string(s)?: return TextEscaping.terminal(TemplateText.elided(s, limit: 60))
            case let other?: return TextEscaping.terminal(TemplateText.elided(other.compactText, limit: 60))
            }
        }
        var updated = cell(version["updateTime"])
        // RFC 3339 with microseconds is more than a reviewer needs; an unreadable time is shown as is.
        if let text = version["updateTime"]?.stringValue, let time = Timestamp(iso8601: text) { updated = time.iso8601 }
        var type = cell(version["updateType"])
        if let source = version["rollbackSource"], source != .null { type += " from \(cell(source))" }
        return [
            cell(version["versionNumber"]), updated, cell(version["updateUser"]?["email"]),
            cell(version["updateOrigin"]), type, cell(version["description"]),
        ]
    }
}
