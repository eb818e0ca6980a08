import RCCore
import RCHTTP

/// The Remote Config REST API (v1) for one project and template namespace: read a template with
/// its ETag, publish with `If-Match`, validate without publishing, list versions, roll back.
/// Templates are ``JSONValue`` objects, their members in the order Google sent them.
///
/// The ETag rules the seed's scripts broke are kept here: a read without an ETag is an error (never
/// a silent `If-Match: *`), `*` is sent only when the caller forces it, and a validation's ETag (it
/// ends in `-0` and matches nothing) is never handed back.
public struct RemoteConfigAPI: Sendable {
    /// Which template: the client one devices fetch (`firebase`) or the server one (`firebase-server`).
    public enum Namespace: String, Sendable, CaseIterable {
        case client = "firebase"
        case server = "firebase-server"
    }

    public let api: GoogleAPI
    public let project: String
    public let namespace: Namespace
    /// `scheme://host[:port]` the calls go to.
    public let origin: String

    public static let defaultOrigin = "https://firebaseremoteconfig.googleapis.com"
    /// How many versions a listing can hold before the pages are taken to be a loop (Google keeps 300).
    static let maximumVersions = 1_000
    /// The most versions one `listVersions` page asks for (the API's own limit; tests page in smaller steps).
    var pageSize = 300

    /// `endpoint`: a URL whose scheme, host and port replace Google's (`--endpoint`), or `nil`.
    public init(api: GoogleAPI, project: String, namespace: Namespace = .client, endpoint: String? = nil) {
        self.api = api
        self.project = project
        self.namespace = namespace
        origin = GoogleEndpoint.origin(endpoint, default: Self.defaultOrigin)
    }

    /// `/v1/projects/{p}/remoteConfig` for the client template (the path Google documents for it),
    /// `/v1/projects/{p}/namespaces/{ns}/remoteConfig` for another namespace.
    var templateURL: String {
        let project = TextEscaping.percentEncoded(project)
        return switch namespace {
        case .client: "\(origin)/v1/projects/\(project)/remoteConfig"
        case .server: "\(origin)/v1/projects/\(project)/namespaces/\(namespace.rawValue)/remoteConfig"
        }
    }

    /// The template now published, or the one of `version`, and its ETag.
    public func get(version: Int64? = nil) async throws(GoogleError) -> (template: JSONValue, etag: String) {
        let url = templateURL + (version.map { "?versionNumber=\($0)" } ?? "")
        let call = "Remote Config: get the \(namespace.rawValue) template" + (version.map { " version \($0)" } ?? "")
        let (template, response) = try await api.json("GET", url, call: call)
        return (template, try Self.etag(of: response, call: call))
    }

    /// Publishes `template` (PUT) over the one `etag` was read with. `force` sends `If-Match: *`
    /// and overwrites whatever is published; without it an ETag is required. `validateOnly` asks
    /// Google to check the template and write nothing; it returns the template as Google would
    /// publish it and `etag` unchanged (or `*` when forced), the `If-Match` the real publish must send.
    ///
    /// Only the input fields go: `version` is cut to its `description` (the rest is output only)
    /// and a top-level `etag` member (where a saved template keeps its ETag) is not sent.
    public func publish(
        _ template: JSONValue, etag: String?, validateOnly: Bool = false, force: Bool = false
    ) async throws(GoogleError) -> (template: JSONValue, etag: String) {
        let action = validateOnly ? "validate" : "publish"
        let call = "Remote Config: \(action) the \(namespace.rawValue) template"
        let ifMatch: String
        if force {
            ifMatch = "*"
        } else if let etag, !etag.isEmpty {
            guard etag != "*" else {
                throw GoogleError(call, "the ETag \"*\" overwrites any template: that takes force")
            }
            ifMatch = etag
        } else {
            throw GoogleError(
                call,
                "no ETag: without the ETag of the template this one was based on, publishing could "
                    + "overwrite someone else's changes (read the template first, or force it)")
        }
        guard ifMatch.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) else {
            throw GoogleError(call, "the ETag has characters a header cannot carry")
        }
        let body = try Self.publishable(template, call: call)
        let url = templateURL + (validateOnly ? "?validateOnly=true" : "")
        let (published, response) = try await api.json(
            "PUT", url, body: body, headers: ["If-Match: \(ifMatch)"], call: call)
        // A validation's ETag ends in -0 and matches no template: the next publish needs the original.
        if validateOnly { return (published, ifMatch) }
        return (published, try Self.etag(of: response, call: call))
    }

    /// The template's versions, newest first, at most `limit` of them (all Google keeps without
    /// one: the last 300, none older than 90 days), those `filter` lets through, read page by page.
    public func versions(limit: Int? = nil, filter: VersionFilter = VersionFilter()) async throws(GoogleError)
        -> [JSONValue]
    {
        let call = "Remote Config: list the \(namespace.rawValue) template's versions"
        if let limit, limit < 1 { throw GoogleError(call, "the limit must be at least 1, not \(limit)") }
        var versions: [JSONValue] = []
        var pageToken: String?
        var seenTokens: Set<String> = []
        // A server handing out a new token on every page (empty pages, or one version each) is not
        // caught by the repeated-token check: the pages stop where Google's 300 kept versions
        // would long have ended.
        let maximumPages = Self.maximumVersions / pageSize + 2
        var pages = 0
        repeat {
            pages += 1
            guard pages <= maximumPages else {
                throw GoogleError(
                    call,
                    "the server kept sending pages: \(maximumPages) pages and \(versions.count) versions, where "
                        + "Google keeps at most 300 versions; stopped")
            }
            let wanted = min(limit.map { $0 - versions.count } ?? pageSize, pageSize)
            var url = templateURL + ":listVersions?pageSize=\(wanted)" + filter.query
            if let pageToken { url += "&pageToken=\(TextEscaping.percentEncoded(pageToken))" }
            let (page, _) = try await api.json("GET", url, call: call)
            switch page["versions"] {
            case let .array(items)?: versions += items
            case nil: break  // an empty history has no member at all
            case let other?: throw GoogleError(call, "\"versions\" is a JSON \(other.typeName), not an array")
            }
            pageToken = page["nextPageToken"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
            // A server that hands back a token it gave before would keep this loop going for good.
            if let token = pageToken, !seenTokens.insert(token).inserted {
                throw GoogleError(call, "the server repeated a page token")
            }
        } while pageToken != nil && versions.count < (limit ?? Int.max)
        return limit.map { Array(versions.prefix($0)) } ?? versions
    }

    /// Publishes version `version` again as the current template (`:rollback`, `{"versionNumber": "N"}`);
    /// returns the template now published and its ETag. Google answers 404 for a version it no longer has.
    public func rollback(to version: Int64) async throws(GoogleError) -> (template: JSONValue, etag: String) {
        let call = "Remote Config: roll the \(namespace.rawValue) template back to version \(version)"
        guard version > 0 else { throw GoogleError(call, "a version number is at least 1") }
        let body = JSONValue.object([("versionNumber", .string(String(version)))])
        let (template, response) = try await api.json("POST", templateURL + ":rollback", body: body, call: call)
        return (template, try Self.etag(of: response, call: call))
    }

    /// The answer's ETag: required, since the next publish depends on it. (Remote Config only sends it
    /// to a request that accepts gzip; every request here does.)
    static func etag(of response: HTTPResponse, call: String) throws(GoogleError) -> String {
        try etag(response.header("etag"), status: response.status, call: call)
    }

    /// The longest ETag taken: Google's are a few dozen characters (`etag-<project number>-<version>`).
    static let maximumETagLength = 1_024

    /// The ETag header's value, required, and one a request can send back as `If-Match`: visible
    /// ASCII, at most ``maximumETagLength`` bytes. Anything else is refused on arrival, before it is
    /// written into a template file or shown to the operator.
    static func etag(_ value: String?, status: Int, call: String) throws(GoogleError) -> String {
        guard let value, !value.isEmpty else { throw GoogleError(call, "no ETag in the answer", status: status) }
        guard value.utf8.count <= maximumETagLength else {
            throw GoogleError(
                call,
                "the ETag in the answer is \(value.utf8.count) bytes long, more than any ETag (at most "
                    + "\(maximumETagLength))", status: status)
        }
        guard value.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw GoogleError(
                call,
                "the ETag in the answer, \(TextEscaping.snippet(value, maxBytes: 64)), has characters "
                    + "an If-Match header cannot carry", status: status)
        }
        return value
    }

    /// `template` as a publish sends it: an object, `version` cut to `{description}`, no `etag` member.
    static func publishable(_ template: JSONValue, call: String) throws(GoogleError) -> JSONValue {
        guard let members = template.objectMembers else {
            throw GoogleError(call, "a template is a JSON object, not \(template.typeName)")
        }
        var kept: [(key: String, value: JSONValue)] = []
        for member in members where member.key != "etag" {
            if member.key == "version" {
                guard let description = member.value["description"] else { continue }
                kept.append(("version", .object([("description", description)])))
            } else {
                kept.append(member)
            }
        }
        return .object(kept)
    }
}
