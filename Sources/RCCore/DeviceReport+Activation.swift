extension DeviceReport {
    /// The report's `activation` member (safe activation): the template version whose activation
    /// waits for a maintenance window or a hold, the one on trial, the last rollback and the
    /// rejected versions. A fleet view counts deferred devices and rollbacks per version from it.
    public struct Activation: Sendable, Equatable {
        /// The template version whose activation is deferred.
        public var deferred: String?
        /// The template version on trial (its health check runs).
        public var trial: String?
        public var lastRollback: Rollback?
        public var rejected: [String] = []

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

        public init(
            deferred: String? = nil, trial: String? = nil, lastRollback: Rollback? = nil, rejected: [String] = []
        ) {
            self.deferred = deferred
            self.trial = trial
            self.lastRollback = lastRollback
            self.rejected = rejected
        }

        /// The most rejected versions a report carries (the newest).
        public static let maximumRejected = 32

        var json: JSONValue {
            .object([
                ("deferred", .optional(deferred)), ("trial", .optional(trial)),
                (
                    "lastRollback",
                    lastRollback.map {
                        .object([
                            ("templateVersion", .string($0.templateVersion)), ("at", .string($0.at.iso8601)),
                            ("reason", .string(String($0.reason.prefix(DeviceReport.maximumTextLength)))),
                        ])
                    } ?? .null
                ),
                ("rejected", .array(rejected.suffix(Self.maximumRejected).map(JSONValue.string))),
            ])
        }

        /// Reads the member of a published report; anything missing is empty (an older agent's report).
        static func parse(_ json: JSONValue?) throws(DeviceReportError) -> Activation {
            guard let json, json != .null else { return Activation() }
            guard json.objectMembers != nil else {
                throw DeviceReportError("activation is \(json.typeName), not an object")
            }
            func text(_ value: JSONValue?, _ name: String) throws(DeviceReportError) -> String? {
                switch value {
                case nil, .null?: return nil
                case let .string(text)? where text.utf8.count <= DeviceReport.maximumTextLength: return text
                case let value?:
                    throw DeviceReportError(
                        "activation.\(name) is not a string of at most \(DeviceReport.maximumTextLength) bytes (\(value.typeName))"
                    )
                }
            }
            var activation = Activation(
                deferred: try text(json["deferred"], "deferred"), trial: try text(json["trial"], "trial"))
            if let rollback = json["lastRollback"], rollback != .null {
                guard let version = try text(rollback["templateVersion"], "lastRollback.templateVersion"),
                    let atText = try text(rollback["at"], "lastRollback.at"), let at = Timestamp(iso8601: atText)
                else { throw DeviceReportError("activation.lastRollback needs a templateVersion and an ISO 8601 at") }
                activation.lastRollback = Rollback(
                    templateVersion: version, at: at, reason: try text(rollback["reason"], "lastRollback.reason") ?? "")
            }
            switch json["rejected"] {
            case nil, .null?: break
            case let .array(items)?:
                guard items.count <= maximumRejected else {
                    throw DeviceReportError("activation.rejected has \(items.count) versions, over \(maximumRejected)")
                }
                for item in items {
                    guard let version = try text(item, "rejected[]") else {
                        throw DeviceReportError("activation.rejected holds a null")
                    }
                    activation.rejected.append(version)
                }
            case let value?: throw DeviceReportError("activation.rejected is \(value.typeName), not an array")
            }
            return activation
        }
    }
}
