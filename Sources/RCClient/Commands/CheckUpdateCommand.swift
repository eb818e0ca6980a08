import RCCore
import RCStore
import RCSystem

/// `rcagent check-update`: compares the installed app version with the update keys.
/// Exit 0 = no applicable update, 100 = recommended, 101 = required, 1 = cannot tell.
enum CheckUpdateCommand {
    static let spec = CommandSpec(
        "check-update",
        summary:
            "Compare the installed version with the update keys (exit 0 none, 100 recommended, 101 required, 1 unknown).",
        options: [
            .flag("required", "only the required-update key"),
            .flag("recommended", "only the recommended-update key"),
            .value(
                "app-version", "V", "the installed version (default: [App] Version= or the version of [App] Package=)"),
            .flag("fresh", "ask the daemon for a forced fetch first, and wait for it"),
            .value("timeout", "D", "how long --fresh waits (default: FetchTimeout + 10s)"),
            .flag("json", "print the verdict as one JSON document"),
            .value(
                "format", "FORMAT",
                "text, or env: RCAGENT_UPDATE_*=\"value\" lines a shell can eval (exit status as for text)"),
        ], run: run)

    static let recommendedExit: Int32 = 100
    static let requiredExit: Int32 = 101

    static func run(_ invocation: Invocation) throws(CLIError) -> Int32 {
        let arguments = invocation.arguments
        let format = arguments.value("format") ?? "text"
        guard format == "text" || format == "env" else {
            throw .usage("--format must be text or env, got '\(format)'", command: spec)
        }
        if format == "env" && invocation.json {
            throw .usage("--format env and --json exclude each other", command: spec)
        }
        let config = try invocation.config()
        let freshness = arguments.has("fresh") ? try refresh(invocation, config: config) : nil
        var kinds: [(kind: UpdateKind, key: String)] = []
        if !arguments.has("recommended") || arguments.has("required") {
            kinds.append((.required, config.requiredUpdateKey))
        }
        if !arguments.has("required") || arguments.has("recommended") {
            kinds.append((.recommended, config.recommendedUpdateKey))
        }

        let reader = try invocation.values()
        let now = Timestamp.now()
        var report = Report(freshness: freshness)
        // With --required or --recommended alone, "none" is about that key only.
        report.onlyKind = kinds.count == 1 ? kinds[0].kind : nil
        if let status = try? reader.store?.status() {
            report.stale = status.stale.isSet
            report.configAge = status.lastSuccess.map { (now - $0).milliseconds / 1_000 }
        }
        do {
            // A database that exists but cannot be read may hold a required update the defaults
            // file does not: the verdict from the defaults alone would be a guess.
            if let problem = reader.storeProblem {
                throw UpdateCheckError("cannot read the state database (\(problem))")
            }
            let (installed, origin) = try installedVersion(invocation, config: config)
            report.installed = installed
            var offers: [(kind: UpdateKind, key: String, value: String?)] = []
            for (kind, key) in kinds {
                let value: String?
                do {
                    value = try reader.valueWithoutFallback(forKey: key)?.text
                } catch let error as StoreError {
                    throw UpdateCheckError("cannot read the state database (\(error))")
                }
                offers.append((kind, key, value))
            }
            report.verdict = try UpdateChecker(scheme: config.versionScheme)
                .check(installed: installed, installedOrigin: origin, offers: offers, now: now)
        } catch let error as UpdateCheckError {
            report.error = error.reason
        } catch let error as CLIError {
            throw error
        } catch {
            report.error = "\(error)"
        }
        if invocation.json {
            Output.raw(report.json.compactText + "\n")
        } else if format == "env" {
            Output.raw(report.environment)
            if let error = report.error { Output.err("Error: cannot tell whether an update applies: \(error)\n") }
        } else {
            Output.out(report.text)
            if let error = report.error { Output.err("Error: cannot tell whether an update applies: \(error)\n") }
        }
        switch report.verdict?.result {
        case .required?: return requiredExit
        case .recommended?: return recommendedExit
        case .none?: return ExitCode.ok
        case nil: return ExitCode.failure
        }
    }

    /// `--app-version`, else `[App] Version=`, else the dpkg version of `[App] Package=`.
    static func installedVersion(_ invocation: Invocation, config: AgentConfig) throws -> (String, String) {
        if let version = invocation.arguments.value("app-version") { return (version, "--app-version") }
        guard config.appVersion != nil || config.appPackage != nil else {
            throw UpdateCheckError("no installed version: set [App] Version= or Package=, or pass --app-version")
        }
        let found = try InstalledApp.version(
            config: config, dpkgStatusFile: InstalledApp.dpkgStatusFile(environment: invocation.environment))
        return (found.version, found.origin)
    }

    /// Asks the daemon for a forced fetch and waits; on failure or timeout the cache is used and the note says so.
    static func refresh(_ invocation: Invocation, config: AgentConfig) throws(CLIError) -> (ok: Bool, note: String?) {
        let timeout = try invocation.duration("timeout") ?? config.fetchTimeout + .seconds(10)
        do {
            let answer = try invocation.request(
                .fetch(force: true, ignoreThrottle: false, wait: true), expecting: FetchResponse.self, timeout: timeout)
            return (true, FetchCommand.describeOutcome(answer.response).text)
        } catch {
            return (false, "could not refresh (\(error.message)); using the cached config")
        }
    }

    struct Report {
        var freshness: (ok: Bool, note: String?)?
        var installed: String?
        var verdict: UpdateVerdict?
        var error: String?
        var stale = false
        var configAge: Int64?
        /// The one kind checked (`--required` or `--recommended` alone), `nil` when both were.
        var onlyKind: UpdateKind?

        var json: JSONValue {
            let offer = verdict?.result == UpdateVerdict.Result.none ? nil : verdict?.offer
            func string(_ s: String?) -> JSONValue { s.map(JSONValue.string) ?? .null }
            var fields: [(key: String, value: JSONValue)] = [
                ("result", .string(verdict?.result.rawValue ?? "unknown")),
                ("installed", string(installed)),
                ("target", string(offer?.version)),
                ("download", string(offer?.download)),
                ("deadline", string(offer?.deadline?.iso8601)),
                ("message", string(offer?.message)),
                ("stale", .bool(stale)),
                ("configAgeSeconds", configAge.map(JSONValue.integer) ?? .null),
                ("error", string(error)),
                ("promotedByDeadline", .bool(verdict?.promotedByDeadline ?? false)),
            ]
            if let freshness {
                fields.append(("fresh", .object([("ok", .bool(freshness.ok)), ("note", string(freshness.note))])))
            }
            return .object(fields)
        }

        /// `--format env`: the JSON fields as `RCAGENT_UPDATE_<FIELD>="value"` lines, quoted by
        /// ``TextEscaping/shellDoubleQuoted(_:)`` so that `eval` in sh (the boot script) reads back
        /// exactly the value, whatever the remote config put in a download URL or message. Absent
        /// fields are empty strings; a value no shell can hold (a NUL) is left empty and said on stderr.
        var environment: String {
            let names = [
                "result": "RESULT", "installed": "INSTALLED", "target": "VERSION", "download": "DOWNLOAD",
                "deadline": "DEADLINE", "message": "MESSAGE", "stale": "STALE", "error": "ERROR",
            ]
            guard case let .object(fields) = json else { return "" }
            var lines = ""
            for (key, value) in fields {
                guard let name = names[key] else { continue }
                let text: String =
                    switch value {
                    case let .string(s): s
                    case let .bool(b): b ? "yes" : "no"
                    default: ""
                    }
                let quoted: String
                do {
                    quoted = try TextEscaping.shellDoubleQuoted(text)
                } catch {
                    Output.err("Warning: \(key) left empty: \(error)\n")
                    quoted = "\"\""
                }
                lines += "RCAGENT_UPDATE_\(name)=\(quoted)\n"
            }
            // Why --fresh fell back to the cache (our own text: always representable).
            let note = freshness.flatMap { $0.ok ? nil : $0.note } ?? ""
            lines += "RCAGENT_UPDATE_NOTE=\((try? TextEscaping.shellDoubleQuoted(note)) ?? "\"\"")\n"
            return lines
        }

        var text: TerminalText {
            var lines: [TerminalText] = []
            if let freshness, !freshness.ok, let note = freshness.note { lines.append("note: \(note)") }
            guard let verdict else { return lines.map { $0 + "\n" }.joined() }
            switch verdict.result {
            case .none:
                if let onlyKind {
                    // The other key was not read: an update of that kind may still apply.
                    let other: UpdateKind = onlyKind == .required ? .recommended : .required
                    lines.append(
                        "no \(onlyKind.rawValue) update for installed \(installed ?? "-") "
                            + "(--\(onlyKind.rawValue): the \(other.rawValue)-update key was not checked)")
                } else {
                    lines.append("no update: installed \(installed ?? "-") is current")
                }
            case .recommended, .required:
                let offer = verdict.offer!
                let why = verdict.promotedByDeadline ? " (recommended, past its deadline)" : ""
                lines.append(
                    "\(verdict.result.rawValue) update\(TerminalText(verbatim: why)): \(offer.version) (installed \(installed ?? "-"))"
                )
                lines.append("download: \(offer.download)")
                if let deadline = offer.deadline { lines.append("deadline: \(deadline.iso8601)") }
                if let message = offer.message { lines.append("message: \(message)") }
            }
            if stale { lines.append("note: the cached config is marked stale") }
            return lines.map { $0 + "\n" }.joined()
        }
    }
}
