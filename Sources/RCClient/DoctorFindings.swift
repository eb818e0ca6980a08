internal import CLazyLibraries
import Glibc
import RCCore
import RCStore

/// The doctor's checks of what the daemon last did: the last fetch's outcome, the libraries the
/// configured features load, and safe activation (a trial, a rollback, rejected versions). All of
/// it read-only: from the store (or its reader file) and by loading the libraries in this process.
/// Texts from the store are escaped where `doctor` prints them (``TerminalText``).
enum DoctorFindings {
    /// What the store says of safe activation, read once with the status.
    struct Activation {
        var deferred: DeferredActivation?
        var trial: PendingTrial?
        var rejected: [RejectedVersion]
        /// The newest kept snapshot that was rolled back, and why.
        var lastRollback: (entry: HistoryEntry, reason: RollbackReason)?

        /// `nil` when the store has none of it to read (a database from before safe activation).
        static func read(_ store: StateStore) -> Activation? {
            let deferred: DeferredActivation?
            let trial: PendingTrial?
            let rejected: [RejectedVersion]
            let history: [HistoryEntry]
            do {
                deferred = try store.deferredActivation()
                trial = try store.pendingTrial()
                rejected = try store.rejectedVersions()
                history = try store.history()
            } catch {
                return nil
            }
            let rollback = history.lazy.compactMap { entry -> (HistoryEntry, RollbackReason)? in
                guard case let .rolledBack(reason) = entry.outcome else { return nil }
                return (entry, reason)
            }.first
            return Activation(
                deferred: deferred, trial: trial, rejected: rejected, lastRollback: rollback.map { ($0.0, $0.1) })
        }
    }

    /// The last fetch: a failure is a FAIL showing its error; a throttled one a warning with until when.
    static func lastFetch(_ status: StoreStatus?, now: Timestamp) -> DoctorCommand.Check? {
        guard let status else { return nil }
        func when(_ t: Timestamp?) -> String { t.map { "\($0.iso8601) (\(StatusCommand.age(now - $0)))" } ?? "never" }
        let error = status.lastError ?? "no error recorded"
        switch status.lastStatus {
        case nil:
            return DoctorCommand.Check(name: "fetch", ok: true, detail: "none yet")
        case .success?, .noChange?:
            return DoctorCommand.Check(
                name: "fetch", ok: true, detail: "\(status.lastStatus?.rawValue ?? "") at \(when(status.lastAttempt))")
        case .failure?:
            return DoctorCommand.Check(
                name: "fetch", ok: false,
                detail: "the last fetch failed at \(when(status.lastAttempt)): \(error); "
                    + "last success \(when(status.lastSuccess)) (the daemon keeps serving its last good values)")
        case .throttled?:
            let until = status.throttledUntil.map { ", throttled until \($0.iso8601)" } ?? ""
            return DoctorCommand.Check(
                name: "fetch", ok: true,
                detail: "the server throttled the last fetch at \(when(status.lastAttempt))\(until): \(error)",
                warning: true)
        }
    }

    /// The libraries the configured features load on first use, loaded here as the daemon loads
    /// them (by soname, every function it uses resolved): a FAIL names the feature and why.
    static func libraries(_ config: AgentConfig) -> DoctorCommand.Check {
        var needed: [(library: rc_lazy_library, feature: String)] = []
        switch config.sourceType {
        case .http: needed.append((RC_LAZY_CURL, "the http source"))
        case .firebase: needed.append((RC_LAZY_CURL, "the firebase source"))
        case .file: break
        }
        if !config.mqttBrokers.isEmpty || config.reportTopic != nil {
            needed.append((RC_LAZY_MOSQUITTO, config.mqttBrokers.isEmpty ? "the MQTT report" : "MQTT"))
        }
        if config.trustedKeys != nil { needed.append((RC_LAZY_CRYPTO, "TrustedKeys=")) }
        guard !needed.isEmpty else {
            return DoctorCommand.Check(name: "libraries", ok: true, detail: "none needed by this config")
        }
        var loaded: [String] = []
        var problems: [String] = []
        for (library, feature) in needed {
            if let reason = rc_lazy_require(library) {
                problems.append("\(feature) needs \(String(cString: reason))")
            } else {
                loaded.append("\(String(cString: rc_lazy_soname(library))) (\(feature))")
            }
        }
        guard problems.isEmpty else {
            return DoctorCommand.Check(name: "libraries", ok: false, detail: problems.joined(separator: "; "))
        }
        return DoctorCommand.Check(name: "libraries", ok: true, detail: loaded.joined(separator: ", "))
    }

    /// A pending trial (a warning while its health check may still answer, a FAIL once its
    /// deadline passed a minute ago with nobody deciding), the last rollback and the rejected versions.
    static func activation(_ activation: Activation?, now: Timestamp) -> [DoctorCommand.Check] {
        guard let activation else { return [] }
        var checks: [DoctorCommand.Check] = []
        if let deferred = activation.deferred {
            checks.append(
                DoctorCommand.Check(
                    name: "deferred", ok: true, detail: "\(deferred.text); rcagent activate --now overrides",
                    warning: true))
        }
        if let trial = activation.trial {
            let version = trial.templateVersion ?? "(none)"
            let since = "version \(version) on trial since \(trial.startedAt.iso8601)"
            if trial.deadline + .seconds(60) < now {
                checks.append(
                    DoctorCommand.Check(
                        name: "trial", ok: false,
                        detail: "\(since); its HealthTimeout= ran out at \(trial.deadline.iso8601) and nothing "
                            + "decided (is the daemon running? it rolls the trial back when it starts)"))
            } else {
                checks.append(
                    DoctorCommand.Check(
                        name: "trial", ok: true,
                        detail: "\(since); the health check decides by \(trial.deadline.iso8601)", warning: true))
            }
        }
        var parts: [String] = []
        if let (entry, reason) = activation.lastRollback {
            let version = entry.templateVersion ?? "(none)"
            let at = activation.rejected.last { $0.templateVersion == entry.templateVersion }?.at
            parts.append(
                "last rollback: version \(version)" + (at.map { " at \($0.iso8601)" } ?? "")
                    + " (\(reason.description))")
        }
        if !activation.rejected.isEmpty {
            let shown = activation.rejected.suffix(10).map(\.templateVersion)
            let more = activation.rejected.count > 10 ? " and \(activation.rejected.count - 10) more" : ""
            parts.append("rejected versions (never activated again here): \(shown.joined(separator: ", "))\(more)")
        }
        if parts.isEmpty {
            checks.append(DoctorCommand.Check(name: "activation", ok: true, detail: "nothing rolled back or rejected"))
        } else {
            checks.append(
                DoctorCommand.Check(
                    name: "activation", ok: true,
                    detail: parts.joined(separator: "; ") + " (see rcagent history)", warning: true))
        }
        return checks
    }

    /// The metrics file (`[Report] MetricsFile=`): when the daemon last wrote it, or why it cannot
    /// be there (its directory is missing); `nil` without one.
    static func metrics(_ config: AgentConfig, now: Timestamp) -> DoctorCommand.Check? {
        guard let path = config.metricsFile else { return nil }
        var info = stat()
        if stat(path, &info) == 0 {
            let written = Timestamp(milliseconds: Int64(info.st_mtim.tv_sec) * 1_000)
            return DoctorCommand.Check(
                name: "metrics", ok: true,
                detail: "\(path) written \(written.iso8601) (\(StatusCommand.age(now - written)))")
        }
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) }.flatMap { $0.isEmpty ? "/" : $0 } ?? "/"
        var directoryInfo = stat()
        if stat(directory, &directoryInfo) != 0 {
            return DoctorCommand.Check(
                name: "metrics", ok: false, detail: "\(path): the directory \(directory) does not exist")
        }
        return DoctorCommand.Check(
            name: "metrics", ok: false, detail: "\(path) not written (the daemon's log says why, if it runs)")
    }
}
