import RCCore

/// A retained message on the report topic that is not a device's report: the topic it came on and
/// why it was refused (bad JSON, a wrong type, too big, a report naming another device, a topic
/// with extra levels). Both are the sender's text, so both are escaped wherever they are shown.
public struct UnreadableReport: Sendable, Equatable {
    public let topic: String
    public let reason: String
    // Made only by the fleet inbox, with the memberwise init of this module.
}

/// What `rcadmin fleet status` says about a fleet: the counts and the device lists, computed from
/// the reports alone (no clock, no broker), so the rules are testable on their own. The MQTT side
/// (``FleetInbox``, ``ReportCollector``) gathers the reports; ``FleetStatusOutput`` prints this.
public struct FleetSummary: Sendable {
    /// Devices on one template version (`nil`: no fetched template active).
    public struct VersionCount: Sendable, Equatable {
        public let version: String?
        public let devices: Int
    }

    /// The readable reports, ordered by device id.
    public let reports: [DeviceReport]
    /// Refused messages, ordered by topic.
    public let unreadable: [UnreadableReport]
    /// Template versions, newest first (see ``TemplateVersionOrder``), with their device counts.
    public let versions: [VersionCount]
    /// The highest numeric template version any device reports; `nil` when none reports one.
    public let newestVersion: String?

    /// Device ids per category, each ordered by id.
    public let online: [String]
    public let offline: [String]
    /// The stale flag is set: a push said there is something newer, the fetch has not happened yet.
    public let stale: [String]
    /// The last fetch failed (`lastFetch.status` is `failure`) or left an error.
    public let failing: [String]
    public let requiredUpdate: [String]
    public let recommendedUpdate: [String]
    /// The update check could not tell (`app.update` is `unknown`).
    public let updateUnknown: [String]
    /// Devices whose template version is not ``newestVersion``: an older one, a non-numeric one or
    /// none, offline devices included (they have not got it either). Empty without a newest version.
    public let lagging: [String]
    /// A fetched snapshot waits for a maintenance window or a hold (`activation.deferred`).
    public let deferred: [String]
    /// The device rolled a version back (`activation.lastRollback`).
    public let rolledBack: [String]
    /// Per template version, newest first, the devices that rolled it back or reject it (their
    /// `activation.lastRollback` or `activation.rejected` names it): the signal to halt a rollout.
    /// Reports without `activation` (agents before safe activation) count nowhere.
    public let rollbacks: [VersionCount]

    public var devices: Int { reports.count }

    public init(reports: some Sequence<DeviceReport>, unreadable: some Sequence<UnreadableReport> = []) {
        let reports = reports.sorted { $0.deviceId.precedesByBytes($1.deviceId) }
        self.reports = reports
        self.unreadable = unreadable.sorted {
            $0.topic.sameBytes(as: $1.topic) ? $0.reason.precedesByBytes($1.reason) : $0.topic.precedesByBytes($1.topic)
        }
        // Keyed by bytes: two version texts that only look alike are two versions.
        var counts: [ByteKey?: Int] = [:]
        for report in reports { counts[report.templateVersion.map { ByteKey($0) }, default: 0] += 1 }
        versions = counts.map { VersionCount(version: $0.key?.text, devices: $0.value) }
            .sorted { TemplateVersionOrder.precedes($0.version, $1.version) }
        let newest = versions.first { TemplateVersionOrder.number($0.version) != nil }?.version
        newestVersion = newest
        func ids(_ included: (DeviceReport) -> Bool) -> [String] { reports.filter(included).map(\.deviceId) }
        online = ids { $0.online }
        offline = ids { !$0.online }
        stale = ids { $0.stale.set }
        failing = ids { $0.lastFetch.status == "failure" || !($0.lastFetch.error ?? "").isEmpty }
        requiredUpdate = ids { $0.update == .required }
        recommendedUpdate = ids { $0.update == .recommended }
        updateUnknown = ids { $0.update == .unknown }
        let newestNumber = TemplateVersionOrder.number(newest)
        lagging = newestNumber == nil ? [] : ids { TemplateVersionOrder.number($0.templateVersion) != newestNumber }
        deferred = ids { $0.activation?.deferred != nil }
        rolledBack = ids { $0.activation?.lastRollback != nil }
        var rolled: [ByteKey: Int] = [:]
        for report in reports {
            guard let activation = report.activation else { continue }
            // Each device once per version, however it names it.
            var versions = Set(activation.rejected.map { ByteKey($0) })
            if let rollback = activation.lastRollback { versions.insert(ByteKey(rollback.templateVersion)) }
            for version in versions { rolled[version, default: 0] += 1 }
        }
        rollbacks = rolled.map { VersionCount(version: $0.key.text, devices: $0.value) }
            .sorted { TemplateVersionOrder.precedes($0.version, $1.version) }
    }

    /// Devices on the newest version.
    public var onNewest: Int { newestVersion == nil ? 0 : devices - lagging.count }

    /// `part` of the devices in whole percent, rounded down: 100% only when it is all of them.
    public func percent(_ part: Int) -> Int { devices == 0 ? 0 : part * 100 / devices }

    /// The device lists by name, in the order the text and JSON outputs show them.
    public var lists: [(name: String, title: String, devices: [String])] {
        [
            ("offline", "offline", offline),
            ("stale", "stale", stale),
            ("failing", "failing fetches", failing),
            ("requiredUpdate", "required update pending", requiredUpdate),
            ("recommendedUpdate", "recommended update pending", recommendedUpdate),
            ("updateUnknown", "update state unknown", updateUnknown),
            ("lagging", "lagging behind the newest version", lagging),
            ("deferred", "activation deferred", deferred),
            ("rolledBack", "rolled back", rolledBack),
        ]
    }
}

/// How template versions sort: Remote Config numbers its versions, so numbers compare as numbers
/// (`10` after `9`, any length, leading zeros ignored); anything else a device reports (hostile or
/// from another source) comes after every number, by its text; no version at all comes last.
public enum TemplateVersionOrder {
    /// The digits of a numeric version without leading zeros (`"0"` stays), `nil` for anything else.
    /// Kept as text: a report may carry more digits than any integer type holds.
    public static func number(_ version: String?) -> Substring? {
        guard let version, !version.isEmpty, version.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        let trimmed = version.drop { $0 == "0" }
        return trimmed.isEmpty ? "0" : trimmed
    }

    /// Whether `a` is shown before `b`: the newer number first, then non-numeric text, then none.
    public static func precedes(_ a: String?, _ b: String?) -> Bool {
        switch (number(a), number(b)) {
        case let (x?, y?):
            // More digits is a bigger number; equal lengths compare digit by digit.
            if x.utf8.count != y.utf8.count { return x.utf8.count > y.utf8.count }
            if x != y { return x > y }
            return (a ?? "").precedesByBytes(b ?? "")  // "042" and "42": one order, whichever it is
        case (_?, nil): return true
        case (nil, _?): return false
        case (nil, nil):
            switch (a, b) {
            case let (x?, y?): return x.precedesByBytes(y)
            case (_?, nil): return true
            default: return false
            }
        }
    }
}
