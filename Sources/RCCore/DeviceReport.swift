/// The state one agent reports about itself (`[Report] MQTTStatusTopic=`): published retained on
/// `<topic>/<deviceId>`, read back by `rcadmin fleet status`. The member names are a stable
/// interface; readers ignore members they do not know, so later agents may add some.
public struct DeviceReport: Sendable, Equatable {
    /// The stale flag: set by a push, cleared by the next successful fetch.
    public struct Stale: Sendable, Equatable {
        public var set: Bool
        public var since: Timestamp?
        public init(set: Bool, since: Timestamp?) {
            self.set = set
            self.since = since
        }
    }

    /// The last fetch attempt: `status` is the store's (`success`, `no-change`, `failure`,
    /// `throttled`, ...), `nil` before the first one.
    public struct LastFetch: Sendable, Equatable {
        public var status: String?
        public var at: Timestamp?
        public var error: String?
        public init(status: String?, at: Timestamp?, error: String?) {
            self.status = status
            self.at = at
            self.error = error
        }
    }

    /// Whether an update of the device's app is offered (`unknown`: the check could not tell).
    public enum Update: String, Sendable, CaseIterable {
        case none, recommended, required, unknown
    }

    public var deviceId: String
    /// `false` in the last will the broker publishes when the connection dies, and in the report
    /// a cleanly stopping agent sends last; the other members are then as of that report.
    public var online: Bool
    /// When this report was made.
    public var at: Timestamp
    public var agentVersion: String
    /// The active template's version, `nil` when no fetched template is active.
    public var templateVersion: String?
    public var stale: Stale
    public var lastFetch: LastFetch
    public var appInstalled: String?
    public var update: Update
    /// Live activities the device holds (ended ones waiting for their dismissal included).
    public var activities: Int
    /// With `TrustedKeys=`: the last accepted signed version and when it expires (a fleet view
    /// sees a server that stopped publishing before the devices refuse it); `nil` otherwise.
    public var signed: Signed?
    /// Safe activation: what waits, what is on trial, what was rolled back (DeviceReport+Activation.swift).
    public var activation = Activation()

    /// The last accepted signed document's version and expiry.
    public struct Signed: Sendable, Equatable {
        public var version: Int64
        public var expires: Timestamp
        public init(version: Int64, expires: Timestamp) {
            self.version = version
            self.expires = expires
        }
    }

    public init(
        deviceId: String, online: Bool, at: Timestamp, agentVersion: String, templateVersion: String?, stale: Stale,
        lastFetch: LastFetch, appInstalled: String?, update: Update, activities: Int, signed: Signed? = nil
    ) {
        self.deviceId = deviceId
        self.online = online
        self.at = at
        self.agentVersion = agentVersion
        self.templateVersion = templateVersion
        self.stale = stale
        self.lastFetch = lastFetch
        self.appInstalled = appInstalled
        self.update = update
        self.activities = activities
        self.signed = signed
    }

    /// Limits a reader holds reports to: a hostile broker or device cannot make a fleet view
    /// allocate or print without bound.
    public static let maximumSize = 16 << 10
    public static let maximumTextLength = 1_024

    public var json: JSONValue {
        func time(_ t: Timestamp?) -> JSONValue { t.map { .string($0.iso8601) } ?? .null }
        var members: [(key: String, value: JSONValue)] = [
            ("deviceId", .string(deviceId)),
            ("online", .bool(online)),
            ("at", .string(at.iso8601)),
            ("agentVersion", .string(agentVersion)),
            ("templateVersion", .optional(templateVersion)),
            ("stale", .object([("set", .bool(stale.set)), ("since", time(stale.since))])),
            (
                "lastFetch",
                .object([
                    ("status", .optional(lastFetch.status)), ("at", time(lastFetch.at)),
                    ("error", .optional(lastFetch.error.map { String($0.prefix(Self.maximumTextLength)) })),
                ])
            ),
            ("app", .object([("installed", .optional(appInstalled)), ("update", .string(update.rawValue))])),
            ("activities", .integer(Int64(activities))),
            ("activation", activation.json),
        ]
        // Only on devices that require signatures: the others' reports stay as they were.
        if let signed {
            members.append(
                (
                    "signed",
                    .object([("version", .integer(signed.version)), ("expires", .string(signed.expires.iso8601))])
                ))
        }
        return .object(members)
    }

    /// The same report with what the reader's view does not care about (`at`) taken out: two
    /// reports equal under this need not both be published.
    public func sameState(as other: DeviceReport) -> Bool {
        var other = other
        other.at = at
        return self == other
    }

    /// Reads a published report. Every member a reader relies on is checked for its type and
    /// size; a bad one is an error naming the member, never a crash or a guess.
    public init(parsing bytes: some Collection<UInt8>) throws(DeviceReportError) {
        guard bytes.count <= Self.maximumSize else {
            throw DeviceReportError("is \(bytes.count) bytes, over the \(Self.maximumSize)-byte limit")
        }
        let json: JSONValue
        do { json = try JSONValue.parse(bytes) } catch { throw DeviceReportError("\(error)") }
        guard json.objectMembers != nil else { throw DeviceReportError("is \(json.typeName), not a JSON object") }
        let reader = Reader(json: json, path: "")
        deviceId = try reader.text("deviceId")
        online = try reader.bool("online")
        at = try reader.time("at") ?? Timestamp(milliseconds: 0)
        agentVersion = try reader.optionalText("agentVersion") ?? "?"
        templateVersion = try reader.optionalText("templateVersion")
        let staleReader = try reader.object("stale")
        stale = Stale(set: try staleReader?.bool("set") ?? false, since: try staleReader?.time("since"))
        let fetchReader = try reader.object("lastFetch")
        lastFetch = LastFetch(
            status: try fetchReader?.optionalText("status"), at: try fetchReader?.time("at"),
            error: try fetchReader?.optionalText("error"))
        let appReader = try reader.object("app")
        appInstalled = try appReader?.optionalText("installed")
        let update = try appReader?.optionalText("update") ?? "unknown"
        guard let kind = Update(rawValue: update) else {
            throw DeviceReportError("app.update is \"\(update)\", not none, recommended, required or unknown")
        }
        self.update = kind
        activities = try reader.count("activities")
        activation = try Activation.parse(json["activation"])
        if let signedReader = try reader.object("signed") {
            guard case let .integer(version)? = json["signed"]?["version"], version >= 1 else {
                throw DeviceReportError("signed.version is not a version number")
            }
            guard let expires = try signedReader.time("expires") else {
                throw DeviceReportError("signed.expires is missing")
            }
            signed = Signed(version: version, expires: expires)
        }
    }

    /// Reads members of one object, naming each by its path in errors.
    private struct Reader {
        let json: JSONValue
        let path: String

        func name(_ key: String) -> String { path.isEmpty ? key : path + "." + key }

        func object(_ key: String) throws(DeviceReportError) -> Reader? {
            switch json[key] {
            case nil, .null?: return nil
            case let value? where value.objectMembers != nil: return Reader(json: value, path: name(key))
            case let value?: throw DeviceReportError("\(name(key)) is \(value.typeName), not an object")
            }
        }

        func optionalText(_ key: String) throws(DeviceReportError) -> String? {
            switch json[key] {
            case nil, .null?: return nil
            case let .string(text)?:
                guard text.utf8.count <= DeviceReport.maximumTextLength else {
                    throw DeviceReportError(
                        "\(name(key)) is \(text.utf8.count) bytes, over \(DeviceReport.maximumTextLength)")
                }
                return text
            case let value?: throw DeviceReportError("\(name(key)) is \(value.typeName), not a string")
            }
        }

        func text(_ key: String) throws(DeviceReportError) -> String {
            guard let text = try optionalText(key), !text.isEmpty else {
                throw DeviceReportError("\(name(key)) is missing or empty")
            }
            return text
        }

        func bool(_ key: String) throws(DeviceReportError) -> Bool {
            switch json[key] {
            case let .bool(value)?: return value
            case nil: throw DeviceReportError("\(name(key)) is missing")
            case let value?: throw DeviceReportError("\(name(key)) is \(value.typeName), not true or false")
            }
        }

        func time(_ key: String) throws(DeviceReportError) -> Timestamp? {
            guard let text = try optionalText(key) else { return nil }
            guard let time = Timestamp(iso8601: text) else {
                throw DeviceReportError("\(name(key)) \"\(text)\" is not an ISO 8601 time")
            }
            return time
        }

        func count(_ key: String) throws(DeviceReportError) -> Int {
            switch json[key] {
            case nil, .null?: return 0
            case let .integer(n)? where n >= 0 && n <= 1_000_000: return Int(n)
            case let value?: throw DeviceReportError("\(name(key)) is \(value.compactText), not a count")
            }
        }
    }
}

public struct DeviceReportError: Error, CustomStringConvertible, Sendable {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { "invalid device report: \(reason)" }
}
