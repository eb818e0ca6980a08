import RCCore

/// What a source returned: a document with the ETag that identifies it, or word that the
/// snapshot the agent has (identified by the ETag it sent) is still current.
public enum SourceResult: Sendable, Equatable {
    case document(RemoteDocument, etag: String?)
    case notModified
}

/// A failed fetch: what kind of failure (for backoff and status) and why.
public typealias SourceError = FetchFailure

/// A place remote config comes from: the file, HTTP and Firebase sources.
public protocol ConfigSource: Sendable {
    /// A short description for status and logs (`file /etc/rcagent/remote.json`).
    var name: String { get }

    /// Whether fetching can work at all: `false` only for ``UnconfiguredSource``, which the agent
    /// never asks and never schedules a fetch for.
    var isConfigured: Bool { get }

    /// Fetches the current document. `etag` identifies the snapshot the agent already has;
    /// `trigger` is why (the Firebase protocol names realtime fetches as such).
    func fetch(etag: String?, trigger: FetchTrigger) async throws(SourceError) -> SourceResult
}

extension ConfigSource {
    public var isConfigured: Bool { true }
}

/// No source yet (`Type=file` without `Path=`, as the package installs it): the daemon serves the
/// cache and the defaults, and every fetch is refused with what to configure. Nothing is recorded
/// as a failed fetch, so no backoff builds up while a device waits to be provisioned.
public struct UnconfiguredSource: ConfigSource {
    public init() {}

    public var name: String { "no source" }

    public static let message =
        "no source configured: set [Source] Path= (file), or Type=http with URL=, in agent.conf, then run `rcagent reload`"

    public var isConfigured: Bool { false }

    public func fetch(etag: String?, trigger: FetchTrigger) async throws(SourceError) -> SourceResult {
        throw SourceError(.other, Self.message)
    }
}
