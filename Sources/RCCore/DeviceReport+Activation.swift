extension DeviceReport {
    /// The report's `activation` member (safe activation): a snapshot waiting for a maintenance
    /// window or a hold (`deferred`, its template version), one on trial under its health check
    /// (`trial`), the last rollback, and the versions this device refuses to activate again.
    public struct Activation: Sendable, Equatable {
        /// The template version that waits, `nil` when none does.
        public var deferred: String?
        /// The template version on trial, `nil` when none is.
        public var trial: String?
        public var lastRollback: Rollback?
        /// Versions rejected on this device (rolled back, or left behind by `rcagent rollback`).
        public var rejected: [String]

        /// The last rollback: which version went, when, and why (`health check failed (exit 1)`, ...).
        public struct Rollback: Sendable, Equatable {
            public var templateVersion: String
            public var at: Timestamp
            public var reason: String
            public init(templateVersion: String, at: Timestamp, reason: String) {
                self.templateVersion = templateVersion
                self.at = at
                self.reason = reason
            }
        }

        /// Most rejected versions a reader keeps from one report (the report's size bounds it too).
        public static let maximumRejected = 256

        public init(deferred: String?, trial: String?, lastRollback: Rollback?, rejected: [String]) {
            self.deferred = deferred
            self.trial = trial
            self.lastRollback = lastRollback
            self.rejected = rejected
        }

        public var json: JSONValue {
            let rollback = lastRollback.map { rollback -> JSONValue in
                .object([
                    ("templateVersion", .string(rollback.templateVersion)), ("at", .string(rollback.at.iso8601)),
                    ("reason", .string(rollback.reason)),
                ])
            }
            return .object([
                ("deferred", .optional(deferred)), ("trial", .optional(trial)), ("lastRollback", rollback ?? .null),
                ("rejected", .array(rejected.map(JSONValue.string))),
            ])
        }

        /// Reads the member as a fleet view does: each part checked for its type and size.
        init(_ reader: Reader) throws(DeviceReportError) {
            deferred = try reader.optionalText("deferred")
            trial = try reader.optionalText("trial")
            if let rollback = try reader.object("lastRollback") {
                guard let at = try rollback.time("at") else {
                    throw DeviceReportError("\(rollback.path).at is missing")
                }
                lastRollback = Rollback(
                    templateVersion: try rollback.text("templateVersion"), at: at,
                    reason: try rollback.optionalText("reason") ?? "")
            }
            switch reader.json["rejected"] {
            case nil, .null?: rejected = []
            case let .array(items)?:
                guard items.count <= Self.maximumRejected else {
                    throw DeviceReportError(
                        "\(reader.name("rejected")) lists \(items.count) versions, over \(Self.maximumRejected)")
                }
                rejected = []
                for (index, item) in items.enumerated() {
                    guard case let .string(text) = item, !text.isEmpty,
                        text.utf8.count <= DeviceReport.maximumTextLength
                    else {
                        throw DeviceReportError("\(reader.name("rejected"))[\(index)] is not a template version")
                    }
                    rejected.append(text)
                }
            case let value?:
                throw DeviceReportError("\(reader.name("rejected")) is \(value.typeName), not an array")
            }
        }
    }
}
