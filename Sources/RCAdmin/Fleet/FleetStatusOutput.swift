import RCCore

/// How `rcadmin fleet status` shows a ``FleetSummary``: the text report, the `--json` document and
/// the one-line `--watch` forms. Every text that came from a report (device ids, versions, topics,
/// reasons) goes through ``TextEscaping/terminal(_:)``; the JSON forms escape in JSON instead.
public enum FleetStatusOutput {
    /// The text report: totals, versions, counts per category, then the device lists, each cut
    /// after `limit` ids (`nil`: all) with "... and N more".
    public static func text(_ summary: FleetSummary, topic: String, limit: Int?, complete: Bool = true) -> String {
        let shownTopic = TextEscaping.terminal(topic)
        guard summary.devices > 0 || !summary.unreadable.isEmpty else {
            return "No device reports on \(shownTopic)/+ (no agent publishes there, or none has yet: "
                + "[Report] MQTTStatusTopic= in agent.conf).\n"
        }
        var out = "Devices: \(summary.devices) (online \(summary.online.count), offline \(summary.offline.count))\n"
        if !summary.versions.isEmpty {
            out += "Template versions (newest first):\n"
            let rows = summary.versions.map { entry in
                (
                    entry.version.map(shown) ?? "none",
                    "\(entry.devices)", "\(summary.percent(entry.devices))%"
                )
            }
            let width0 = rows.map { $0.0.unicodeScalars.count }.max() ?? 0
            let width1 = rows.map { $0.1.count }.max() ?? 0
            for (version, count, percent) in rows {
                out +=
                    "  " + pad(version, width0) + "  " + String(repeating: " ", count: width1 - count.count) + count
                    + "  " + percent + "\n"
            }
        }
        let newest = summary.newestVersion.map(shown)
        out += "Newest version: \(newest ?? "none (no device reports a numbered template version)")"
        if newest != nil { out += ", on \(summary.onNewest) (\(summary.percent(summary.onNewest))%)" }
        out += "\n"
        out += "Stale: \(summary.stale.count)\n"
        out += "Failing fetches: \(summary.failing.count)\n"
        out +=
            "Updates pending: \(summary.requiredUpdate.count) required, "
            + "\(summary.recommendedUpdate.count) recommended\n"
        out += "Update state unknown: \(summary.updateUnknown.count)\n"
        if let newest { out += "Lagging behind \(newest): \(summary.lagging.count)\n" }
        out += "Activation deferred: \(summary.deferred.count)\n"
        out += "Rolled back: \(summary.rolledBack.count)\n"
        if !summary.rollbacks.isEmpty {
            out += "Rollbacks per version (devices that rolled it back or reject it):\n"
            let rows = summary.rollbacks.map { (($0.version.map(shown) ?? "none"), "\($0.devices)") }
            let width0 = rows.map { $0.0.unicodeScalars.count }.max() ?? 0
            let width1 = rows.map { $0.1.count }.max() ?? 0
            for (version, count) in rows {
                out +=
                    "  " + pad(version, width0) + "  " + String(repeating: " ", count: width1 - count.count) + count
                    + "\n"
            }
        }
        if !summary.unreadable.isEmpty { out += "Unreadable reports: \(summary.unreadable.count)\n" }
        if !complete {
            out += "(incomplete: reports were still arriving when the time was up)\n"
        }

        // By bytes: a look-alike id (U+212A KELVIN SIGN for K) is another device, never this one.
        let byId = Dictionary(
            summary.reports.map { (ByteKey($0.deviceId), $0) }, uniquingKeysWith: { first, _ in first })
        for list in summary.lists where !list.devices.isEmpty {
            let title = list.name == "lagging" && newest != nil ? "lagging behind \(newest ?? "")" : list.title
            out += "\n\(capitalized(title)) (\(list.devices.count)):\n"
            let items = list.devices.prefix(limit ?? list.devices.count).map { id in
                TextEscaping.terminal(id)
                    + (byId[ByteKey(id)].flatMap { detail(list.name, $0) }.map { ": " + $0 } ?? "")
            }
            out += lines(items, total: list.devices.count)
        }
        if !summary.unreadable.isEmpty {
            out += "\nUnreadable (\(summary.unreadable.count)):\n"
            let entries = summary.unreadable.map {
                TextEscaping.terminal($0.topic) + ": " + TextEscaping.terminal($0.reason)
            }
            out += lines(Array(entries.prefix(limit ?? entries.count)), total: entries.count)
        }
        return out
    }

    /// Each item on a line of its own, indented, then how many of `total` were left out.
    private static func lines(_ items: [String], total: Int) -> String {
        var out = items.map { "  " + $0 + "\n" }.joined()
        if items.count < total { out += "  ... and \(total - items.count) more\n" }
        return out
    }

    /// What a list shows after a device's id: why its fetch fails, which version a lagging one has.
    private static func detail(_ list: String, _ report: DeviceReport) -> String? {
        switch list {
        case "failing":
            let status = report.lastFetch.status.map(TextEscaping.terminal) ?? "?"
            return report.lastFetch.error.map { status + ": " + TextEscaping.snippet($0, maxBytes: 160) } ?? status
        case "lagging": return report.templateVersion.map(shown) ?? "none"
        case "deferred": return report.activation?.deferred.map(shown)
        case "rolledBack":
            guard let rollback = report.activation?.lastRollback else { return nil }
            let reason = rollback.reason.isEmpty ? "" : ": " + TextEscaping.snippet(rollback.reason, maxBytes: 160)
            return "\(shown(rollback.templateVersion)) at \(rollback.at.iso8601)\(reason)"
        default: return nil
        }
    }

    /// A template version as the text forms show it: `v43`; escaped, and cut at 64 bytes (a
    /// report's version may be up to 1 KiB).
    static func shown(_ version: String) -> String {
        "v" + TextEscaping.terminal(TextEscaping.truncated(version, maxBytes: 64))
    }

    private static func capitalized(_ text: String) -> String { text.prefix(1).uppercased() + text.dropFirst() }

    private static func pad(_ text: String, _ width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - text.unicodeScalars.count))
    }

    // MARK: - JSON

    /// The newest version, the counts and the versions: a `--watch --json` line, and the head
    /// of the full `--json` document.
    public static func counts(_ summary: FleetSummary) -> [(String, JSONValue)] {
        func number(_ n: Int) -> JSONValue { .integer(Int64(n)) }
        let versions = summary.versions.map { entry in
            JSONValue.object([
                ("version", entry.version.map(JSONValue.string) ?? .null), ("devices", number(entry.devices)),
                ("percent", number(summary.percent(entry.devices))),
            ])
        }
        let counts: [(String, JSONValue)] = [
            ("devices", number(summary.devices)), ("online", number(summary.online.count)),
            ("offline", number(summary.offline.count)), ("onNewest", number(summary.onNewest)),
            ("stale", number(summary.stale.count)), ("failing", number(summary.failing.count)),
            ("requiredUpdate", number(summary.requiredUpdate.count)),
            ("recommendedUpdate", number(summary.recommendedUpdate.count)),
            ("updateUnknown", number(summary.updateUnknown.count)), ("lagging", number(summary.lagging.count)),
            ("unreadable", number(summary.unreadable.count)), ("deferred", number(summary.deferred.count)),
            ("rolledBack", number(summary.rolledBack.count)),
        ]
        let rollbacks = summary.rollbacks.map { entry in
            JSONValue.object([
                ("version", entry.version.map(JSONValue.string) ?? .null), ("devices", number(entry.devices)),
            ])
        }
        return [
            ("newestVersion", summary.newestVersion.map(JSONValue.string) ?? .null), ("counts", .object(counts)),
            ("versions", .array(versions)), ("rollbacks", .array(rollbacks)),
        ]
    }

    /// The `--json` document: ``counts(_:)``, every list in full (`lists`), the unreadable
    /// messages (`unreadable`) and the reports themselves (`devices`, re-encoded as agents write them).
    public static func json(_ summary: FleetSummary, topic: String, complete: Bool, at: Timestamp) -> JSONValue {
        let lists = summary.lists.map { ($0.name, JSONValue.array($0.devices.map(JSONValue.string))) }
        let unreadable = summary.unreadable.map {
            JSONValue.object([("topic", .string($0.topic)), ("reason", .string($0.reason))])
        }
        return .object(
            [("topic", .string(topic)), ("at", .string(at.iso8601)), ("complete", .bool(complete))]
                + counts(summary)
                + [
                    ("lists", .object(lists)), ("unreadable", .array(unreadable)),
                    ("devices", .array(summary.reports.map(\.json))),
                ])
    }

    // MARK: - Watch

    /// One `--watch` line without its time: `devices 1000 online 998 · v43 812 (81%) · stale 150 ·
    /// failing 0 · offline 2`, plus required updates and unreadable reports when there are any.
    /// The watch prints it when it differs from the last one printed.
    public static func watchLine(_ summary: FleetSummary) -> String {
        var parts = ["devices \(summary.devices) online \(summary.online.count)"]
        if let newest = summary.newestVersion {
            parts.append("\(shown(newest)) \(summary.onNewest) (\(summary.percent(summary.onNewest))%)")
        } else {
            parts.append("no version")
        }
        parts.append("stale \(summary.stale.count)")
        parts.append("failing \(summary.failing.count)")
        parts.append("offline \(summary.offline.count)")
        if !summary.requiredUpdate.isEmpty { parts.append("required update \(summary.requiredUpdate.count)") }
        if !summary.deferred.isEmpty { parts.append("deferred \(summary.deferred.count)") }
        if !summary.rollbacks.isEmpty {
            let perVersion = summary.rollbacks.prefix(3).map { "\($0.version.map(shown) ?? "none") \($0.devices)" }
            let more = summary.rollbacks.count > 3 ? ", ..." : ""
            parts.append("rolled back " + perVersion.joined(separator: ", ") + more)
        }
        if !summary.unreadable.isEmpty { parts.append("unreadable \(summary.unreadable.count)") }
        return parts.joined(separator: " · ")
    }

    /// The `--watch` progress line on a terminal, without its time: `v43 on 812/998 online ·
    /// rolled back 3 · stale 150 · offline 2` (the online devices on the newest version of the
    /// online ones), plus unreadable reports when there are any. Cut to `width` columns (counted
    /// as scalars: every text from a report in it is escaped) so that a redraw with `\r` stays on
    /// one line.
    public static func progressLine(_ summary: FleetSummary, width: Int? = nil) -> String {
        var parts: [String] = []
        let online = summary.online.count
        if let newest = summary.newestVersion, let number = TemplateVersionOrder.number(newest) {
            let onNewest = summary.reports.filter {
                $0.online && TemplateVersionOrder.number($0.templateVersion) == number
            }.count
            parts.append("\(shown(newest)) on \(onNewest)/\(online) online")
        } else {
            parts.append("no version · \(online) online")
        }
        parts.append("rolled back \(summary.rolledBack.count)")
        parts.append("stale \(summary.stale.count)")
        parts.append("offline \(summary.offline.count)")
        if !summary.unreadable.isEmpty { parts.append("unreadable \(summary.unreadable.count)") }
        let line = parts.joined(separator: " · ")
        guard let width, line.unicodeScalars.count > width else { return line }
        return String(String.UnicodeScalarView(line.unicodeScalars.prefix(max(0, width))))
    }

    /// What redraws the progress line in place: back to the line's start, clear it, write it.
    public static let redraw = "\r\u{1b}[2K"

    /// `HH:MM:SS` (UTC) of `at`, the watch line's prefix.
    public static func clock(_ at: Timestamp) -> String {
        let text = at.iso8601  // 2026-11-30T12:00:01Z
        return String(text.dropFirst(11).prefix(8))
    }

    /// One `--watch --json` line: ``counts(_:)`` with the time.
    public static func watchJSON(_ summary: FleetSummary, at: Timestamp) -> JSONValue {
        .object([("at", .string(at.iso8601))] + counts(summary))
    }
}
