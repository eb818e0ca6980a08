/// The required/recommended update feature: the Linux counterpart of the
/// `ios_required_update`/`ios_recommended_update` keys, built so a boot script can trust its exit code.
public enum UpdateKind: String, Sendable {
    case required, recommended
}

/// An update key's value: `{"version", "download", "deadline"?, "message"?}`.
public struct UpdateOffer: Sendable, Equatable {
    public var version: String
    public var download: String
    public var deadline: Timestamp?
    public var message: String?

    /// Reads the value of `key`. An empty value means no update is offered (`nil`); anything that
    /// is not a complete offer is an error: "cannot tell", never a silent "no update".
    public static func parse(_ text: String, key: String) throws(UpdateCheckError) -> UpdateOffer? {
        guard !text.trimmingSpaces().isEmpty else { return nil }
        let json: JSONValue
        do { json = try JSONValue.parse(text) } catch { throw UpdateCheckError("\(key): \(error)") }
        guard json.objectMembers != nil else {
            throw UpdateCheckError(
                "\(key): expected a JSON object {\"version\", \"download\", ...}, got \(json.typeName)")
        }
        func string(_ field: String, required: Bool) throws(UpdateCheckError) -> String? {
            switch json[field] {
            case nil, .null?:
                if required { throw UpdateCheckError("\(key): missing \"\(field)\"") }
                return nil
            case let .string(s)?:
                if required && s.isEmpty { throw UpdateCheckError("\(key): \"\(field)\" is empty") }
                return s
            case let other?:
                throw UpdateCheckError("\(key): \"\(field)\" must be a string, got \(other.typeName)")
            }
        }
        let version = try string("version", required: true)!
        let download = try string("download", required: true)!
        var deadline: Timestamp?
        if let text = try string("deadline", required: false) {
            guard let parsed = Timestamp(iso8601: text) else {
                throw UpdateCheckError(
                    "\(key): \"deadline\" \"\(text)\" is not an ISO 8601 time (e.g. 2027-01-31T00:00:00Z)")
            }
            deadline = parsed
        }
        return UpdateOffer(
            version: version, download: download, deadline: deadline, message: try string("message", required: false))
    }
}

public struct UpdateCheckError: Error, CustomStringConvertible, Sendable, Equatable {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}

/// What a check found: the applicable update, if any, and why.
public struct UpdateVerdict: Sendable, Equatable {
    public enum Result: String, Sendable {
        case none, recommended, required
    }

    public var result: Result
    /// The offer behind the result (for `none`, the newest offer seen, if any).
    public var offer: UpdateOffer?
    /// A recommended update whose deadline has passed counts as required.
    public var promotedByDeadline = false
}

/// Compares the installed version with the offers, in the configured scheme.
public struct UpdateChecker: Sendable {
    public var scheme: VersionScheme

    public init(scheme: VersionScheme) {
        self.scheme = scheme
    }

    /// `offers` maps each kind to its key name and raw value (nil: key absent). Required beats
    /// recommended; a recommended offer past its deadline is reported as required.
    public func check(
        installed: String, installedOrigin: String, offers: [(kind: UpdateKind, key: String, value: String?)],
        now: Timestamp
    ) throws(UpdateCheckError) -> UpdateVerdict {
        let current: AppVersion
        do { current = try AppVersion(installed, scheme: scheme, origin: installedOrigin) } catch {
            throw UpdateCheckError(error.description)
        }
        // Required first: when it applies, a broken recommended value does not matter.
        var best = UpdateVerdict(result: .none, offer: nil)
        for kind in [UpdateKind.required, .recommended] {
            for (_, key, value) in offers.filter({ $0.kind == kind }) {
                guard let value, let offer = try UpdateOffer.parse(value, key: key) else { continue }
                let target: AppVersion
                do { target = try AppVersion(offer.version, scheme: scheme, origin: "\(key) version") } catch {
                    throw UpdateCheckError(error.description)
                }
                guard current < target else { continue }
                if kind == .required { return UpdateVerdict(result: .required, offer: offer) }
                let overdue = offer.deadline.map { $0 <= now } == true
                best = UpdateVerdict(
                    result: overdue ? .required : .recommended, offer: offer, promotedByDeadline: overdue)
            }
        }
        return best
    }
}
