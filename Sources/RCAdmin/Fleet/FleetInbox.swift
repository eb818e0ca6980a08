import RCCore

/// The latest message of every topic under the report topic, read: a device's report, or the
/// reason it is unreadable. A new message on a topic replaces the old one, an empty payload (a
/// cleared retained report) removes it, as the broker's retained store does. No MQTT here: the
/// collector feeds it, tests feed it directly.
///
/// Bounded: each entry keeps a parsed report (its texts at most ``DeviceReport/maximumTextLength``
/// bytes) or a short reason, never a payload, and at most `capacity` topics are kept; messages on
/// further topics are counted in ``overflow`` and left out.
///
/// Topics and device ids are compared, keyed and split by their bytes (``ByteKey``), as the broker
/// routes them: a topic that only looks like another (U+212A KELVIN SIGN for `K`, a level that
/// starts with a combining mark) is a topic of its own, never a stand-in for a device's report.
public struct FleetInbox: Sendable {
    /// The report topic, without the trailing `/`: reports come on `<base>/<deviceId>`.
    public let base: String
    public let capacity: Int
    private var entries: [ByteKey: Entry] = [:]
    /// Messages on new topics dropped because ``capacity`` topics were already kept.
    public private(set) var overflow = 0

    /// One topic's latest message.
    public enum Entry: Sendable, Equatable {
        case report(DeviceReport)
        case unreadable(reason: String)
    }

    /// Topics an `rcadmin fleet status` uses for its own end-of-retained-set marker start with
    /// this after `<base>/`: never a device id (those are 22-character installation ids), and
    /// another operator's marker arriving meanwhile is not a device's report either.
    public static let markerPrefix = "rcadmin-fleet-status-"

    /// How much of a topic or a reason is kept and shown: enough to recognise it, bounded.
    static let shownBytes = 256

    public init(base: String, capacity: Int = 200_000) {
        self.base = base
        self.capacity = capacity
    }

    public var count: Int { entries.count }
    public var isEmpty: Bool { entries.isEmpty }

    /// Takes the message `payload` on `topic`; returns whether what the inbox holds changed.
    /// `oversized`: the message was dropped unread for its size (this many bytes; `payload` is
    /// then empty), and is listed as unreadable.
    @discardableResult
    public mutating func receive(topic: String, payload: [UInt8], oversized: Int? = nil) -> Bool {
        let prefix = base + "/"
        // not ours (the subscriptions see to it)
        guard topic.hasBytePrefix(prefix) else { return false }
        let levelBytes = topic.utf8.dropFirst(prefix.utf8.count)
        let level = String(Substring(levelBytes))
        let hasSlash = levelBytes.contains(UInt8(ascii: "/"))
        if level.hasBytePrefix(Self.markerPrefix) && !hasSlash { return false }
        // A hostile topic can be as long as the broker lets it be: keep a bounded key for it.
        let key = ByteKey(
            topic.utf8.count <= prefix.utf8.count + DeviceReport.maximumTextLength
                ? topic : TextEscaping.truncated(topic, maxBytes: prefix.utf8.count + DeviceReport.maximumTextLength))
        if payload.isEmpty && oversized == nil { return entries.removeValue(forKey: key) != nil }
        let entry =
            oversized.map {
                Entry.unreadable(
                    reason: DeviceReportError(
                        "is \($0) bytes, over the \(DeviceReport.maximumSize)-byte limit (not read)"
                    )
                    .description)
            } ?? Self.read(level: level, hasSlash: hasSlash, payload: payload)
        if entries[key] == nil && entries.count >= capacity {
            overflow += 1
            return false
        }
        guard entries[key] != entry else { return false }
        entries[key] = entry
        return true
    }

    /// What the message on `<base>/<level>` is.
    static func read(level: String, hasSlash: Bool, payload: [UInt8]) -> Entry {
        if level.isEmpty { return .unreadable(reason: "the topic has no device id after the report topic") }
        if hasSlash {
            return .unreadable(reason: "the topic has more than one level after the report topic")
        }
        let report: DeviceReport
        do { report = try DeviceReport(parsing: payload) } catch {
            return .unreadable(reason: TextEscaping.truncated(error.description, maxBytes: shownBytes))
        }
        // A device may publish only its own report: one under another device's name is refused,
        // whatever it says, rather than counted twice or standing in for the other.
        guard report.deviceId.sameBytes(as: level) else {
            return .unreadable(
                reason: "the report's deviceId \""
                    + TextEscaping.truncated(report.deviceId, maxBytes: shownBytes) + "\" is not the topic's last level"
            )
        }
        return .report(report)
    }

    /// The readable reports and the unreadable messages, for ``FleetSummary``.
    public var summary: FleetSummary {
        var reports: [DeviceReport] = []
        var unreadable: [UnreadableReport] = []
        reports.reserveCapacity(entries.count)
        for (topic, entry) in entries {
            switch entry {
            case let .report(report): reports.append(report)
            case let .unreadable(reason):
                unreadable.append(
                    UnreadableReport(
                        topic: TextEscaping.truncated(topic.text, maxBytes: Self.shownBytes), reason: reason))
            }
        }
        return FleetSummary(reports: reports, unreadable: unreadable)
    }
}
