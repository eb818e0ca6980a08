import RCCore
import RCGoogle

/// `rcadmin set-update`: puts an update offer into `<platform>_<kind>_update` by read-modify-write.
/// The template is read with its ETag, the one parameter's default value is replaced
/// (``UpdateKeyEdit``: conditional values, value type, description and group stay), and the result
/// is published with that ETag. When someone else published in between, Google refuses the publish
/// (409 or 412) and the whole cycle runs again on the new template, so their change survives.
enum SetUpdateCommand {
    /// How many read-modify-write cycles are tried before giving up: each refusal means another
    /// publish landed in the second between a read and a write, so five in a row is a sign of
    /// something publishing in a loop, which an operator should look at rather than race.
    static let maximumAttempts = 5

    static let command = AdminCommand(
        words: ["set-update"],
        synopsis: """
            --required|--recommended --platform linux|ios|android --version V --download URL
                                  [--deadline T] [--message M] [--version-scheme dotted|debian] [--server]
                                  [--description TEXT] [--dry-run] [--json]
                                  [--notify [--mqtt URL] [--fcm] [--topic TOPIC] [MQTT options]]
            """,
        help: """
            Sets the update offer {"version", "download"[, "deadline"][, "message"]} as the default value
            of linux_required_update (or <platform>_<kind>_update) in the template, by read-modify-write:
            read with the ETag, change that one default value (conditional values, value type,
            description and parameter group stay as they are; a missing parameter is added with
            valueType JSON), publish with If-Match. If someone else published in between, the template
            is read again and the change applied again, at most \(maximumAttempts) times. When the
            parameter already has this value nothing is published ("no change", exit 0).
            The version is checked against the platform's scheme (linux: --version-scheme, dotted by
            default, as the fleet's agents compare versions), the download URL must be https, the
            deadline is ISO 8601 (written in UTC). --dry-run has Google validate the change and
            publishes nothing. --description sets the new version's description (default: the change).
            --notify then sends the stale ping carrying the new version, as notify-stale does, through
            --mqtt URL and/or --fcm (at least one). --json prints {"outcome", "key", "published",
            "version", "etag", "summary"}.
            """,
        options: AdminCommand.googleOptions + PushDestinations.options + [
            .flag("server"), .flag("required"), .flag("recommended"), .value("platform", "PLATFORM"),
            .value("version", "V"), .value("download", "URL"), .value("deadline", "T"), .value("message", "M"),
            .value("version-scheme", "SCHEME"), .value("description", "TEXT"), .flag("dry-run"), .flag("notify"),
        ],
        arguments: 0...0
    ) { options, environment throws(AdminFailure) in
        // Everything the command line says is checked before the first request: a typo in CI
        // must not cost a token exchange, let alone half a change.
        let edit = try Self.edit(options)
        let notification = try PushDestinations(options)
        let dryRun = options.flag("dry-run")
        if options.flag("notify") && !notification.isRequested {
            throw .usage("--notify needs --mqtt URL, --fcm or both")
        }
        if !options.flag("notify") && notification.isRequested {
            throw .usage("--mqtt and --fcm send the stale ping after the publish: add --notify")
        }
        let context = try GoogleContext(options, environment: environment)
        let api = context.remoteConfig(server: options.flag("server"))
        // The template read back carries the previous version's description, which a publish would
        // repeat: the new version says what this command changed instead.
        let description =
            options.value("description") ?? "rcadmin set-update: \(edit.key) \(edit.version)"
        let outcome = try await publish(edit, api: api, description: description, validateOnly: dryRun)
        report(outcome, dryRun: dryRun, json: options.flag("json"))
        // The ping announces a version devices can fetch: only after a real publish.
        guard options.flag("notify"), outcome.published != nil, !dryRun else {
            if options.flag("notify") { Output.note("no stale ping: nothing was published") }
            return
        }
        try await notification.send(
            templateVersion: outcome.published.flatMap { TemplateCommands.versionNumber(of: $0.template) },
            google: context, notesOnly: options.flag("json"))
    }

    /// The edit the options describe, every field checked (usage errors name the option).
    static func edit(_ options: ParsedOptions) throws(AdminFailure) -> UpdateKeyEdit {
        let kind: UpdateKind
        switch (options.flag("required"), options.flag("recommended")) {
        case (true, false): kind = .required
        case (false, true): kind = .recommended
        default: throw .usage("give exactly one of --required and --recommended")
        }
        guard let platformName = try options.choice("platform", UpdatePlatform.allCases.map(\.rawValue)),
            let platform = UpdatePlatform(rawValue: platformName)
        else { throw .usage("--platform linux|ios|android is required") }
        guard let version = options.value("version") else { throw .usage("--version V is required") }
        guard let download = options.value("download") else { throw .usage("--download URL is required") }
        let schemeName = try options.choice("version-scheme", VersionScheme.allCases.map(\.rawValue))
        let scheme = schemeName.flatMap(VersionScheme.init(rawValue:)) ?? .dotted
        if schemeName != nil && platform != .linux { throw .usage("--version-scheme applies to --platform linux") }
        do {
            return try UpdateKeyEdit(
                kind: kind, platform: platform, version: version, download: download,
                deadline: options.value("deadline"), message: options.value("message"), linuxScheme: scheme)
        } catch {
            // Each field comes from one option, and the message names it: a usage error.
            throw .usage(error.description)
        }
    }

    /// What the cycles ended with: the last edit and, unless it changed nothing, the published
    /// (or validated) template and its ETag.
    struct Outcome {
        let edit: UpdateKeyEditResult
        let published: (template: JSONValue, etag: String)?
    }

    /// Read, apply, publish; again after a stale ETag, at most ``maximumAttempts`` times.
    static func publish(
        _ edit: UpdateKeyEdit, api: RemoteConfigAPI, description: String, validateOnly: Bool
    ) async throws(AdminFailure) -> Outcome {
        for attempt in 1...maximumAttempts {
            let (template, etag) = try await GoogleContext.call { () async throws(GoogleError) in try await api.get() }
            var result: UpdateKeyEditResult
            do { result = try edit.apply(to: template) } catch { throw .failure(error.description) }
            // Nothing to publish is an answer, not a failure: a CI job may run this on every build.
            guard result.changed else { return Outcome(edit: result, published: nil) }
            result.template = TemplateCommands.described(result.template, description)
            do throws(GoogleError) {
                let published = try await api.publish(result.template, etag: etag, validateOnly: validateOnly)
                return Outcome(edit: result, published: published)
            } catch {
                // Google says 409 ABORTED for a stale If-Match, and some paths 412: the same news.
                guard let status = error.status, status == 409 || status == 412 else {
                    throw GoogleContext.failure(error)
                }
                let next =
                    attempt < maximumAttempts ? "; reading it again (attempt \(attempt + 1) of \(maximumAttempts))" : ""
                Output.note("someone else published between the read and the publish (HTTP \(status))\(next)")
            }
        }
        throw .failure(
            "the template changed between every read and publish: gave up after \(maximumAttempts) attempts "
                + "(HTTP 409/412 each time); nothing was published by this command")
    }

    /// The outcome on stdout: the edit in words and the published version, or one JSON object.
    static func report(_ outcome: Outcome, dryRun: Bool, json: Bool) {
        let number = outcome.published.flatMap { TemplateCommands.versionNumber(of: $0.template) }
        if json {
            var members: [(key: String, value: JSONValue)] = [
                ("outcome", .string(outcome.edit.outcome.rawValue)), ("key", .string(outcome.edit.key)),
                ("published", .bool(outcome.published != nil && !dryRun)), ("summary", .string(outcome.edit.summary)),
            ]
            if let published = outcome.published, !dryRun {
                let summary = TemplateCommands.summary(version: number, etag: published.etag, [])
                members += summary.objectMembers ?? []
            }
            Output.json(.object(members))
            return
        }
        Output.data(outcome.edit.summary + "\n")
        guard let published = outcome.published else { return }
        if dryRun {
            Output.data("dry run: Google accepts the change; nothing was published\n")
        } else {
            Output.data(
                "published version \(TemplateCommands.versionText(number)) "
                    + "(ETag \(TextEscaping.terminal(published.etag)))\n")
        }
    }
}
