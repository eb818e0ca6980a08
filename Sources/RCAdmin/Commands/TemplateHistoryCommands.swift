import RCCore
import RCGoogle

/// `rcadmin template versions`, `template rollback` and `template diff`: the template's history,
/// going back in it, and what changed between two points of it (or a file) in words.
enum TemplateHistoryCommands {
    static let versions = AdminCommand(
        words: ["template", "versions"],
        synopsis: "[--server] [--limit N] [--end-version N] [--since TIME] [--until TIME] [--json]",
        help: """
            Lists the template's versions, newest first (Google keeps the last 300, none older than 90
            days): number, update time, user, origin, type and description. --limit N lists the newest
            N. --end-version N starts the list at version N; --since TIME lists the versions updated
            at or after TIME, --until TIME those updated before it (RFC 3339, e.g.
            2026-12-01T08:00:00Z or 2026-12-01T09:00:00+01:00). --json prints the Version objects as
            Google returned them, as one array.
            """,
        options: TemplateCommands.common + [
            .value("limit", "N"), .value("end-version", "N"), .value("since", "TIME"), .value("until", "TIME"),
        ],
        arguments: 0...0
    ) { options, environment throws(AdminFailure) in
        // Checked before the key file is read: a typo costs no token exchange.
        let limit = try options.integer("limit", in: 1...Int64(Int32.max)).map { Int($0) }
        let filter = try versionFilter(options)
        let context = try GoogleContext(options, environment: environment)
        let api = context.remoteConfig(server: options.flag("server"))
        // RemoteConfigAPI pages through the list; the limit only bounds how much is asked for.
        let versions = try await GoogleContext.call { () async throws(GoogleError) in
            try await api.versions(limit: limit, filter: filter)
        }
        if options.flag("json") {
            Output.data(Output.terminalSafeJSON(TemplateVersionTable.json(versions)))
        } else {
            Output.data(TemplateVersionTable.text(versions))
        }
    }

    /// `--end-version`, `--since` and `--until` as listVersions' filters: a positive version, RFC
    /// 3339 times, `--since` before `--until` (else the list would be empty for a typo).
    static func versionFilter(_ options: ParsedOptions) throws(AdminFailure) -> VersionFilter {
        func time(_ name: String) throws(AdminFailure) -> Timestamp? {
            guard let text = options.value(name) else { return nil }
            guard let time = Timestamp(iso8601: text) else {
                throw .usage(
                    "--\(name) must be an RFC 3339 time such as 2026-12-01T08:00:00Z, got '\(TextEscaping.terminal(text))'"
                )
            }
            return time
        }
        let filter = VersionFilter(
            endVersion: try options.integer("end-version"), since: try time("since"), until: try time("until"))
        if let since = filter.since, let until = filter.until, since >= until {
            throw .usage("--since \(since) is not before --until \(until): no version could be listed")
        }
        return filter
    }

    static let rollback = AdminCommand(
        words: ["template", "rollback"], synopsis: "N [--server] [--json]",
        help: """
            Publishes version N again, as a new version (Google answers 404 for a version it no longer
            keeps). Prints the new version number and ETag; --json prints {"version", "etag",
            "rollbackSource"}.
            """,
        options: TemplateCommands.common, arguments: 1...1
    ) { options, environment throws(AdminFailure) in
        // A number, checked before the key file is read: `rollback latest` is a usage error.
        let source = try ParsedOptions.integer(options.positionals[0], what: "the version to roll back to")
        let context = try GoogleContext(options, environment: environment)
        let api = context.remoteConfig(server: options.flag("server"))
        let (template, etag) = try await GoogleContext.call { () async throws(GoogleError) in
            try await api.rollback(to: source)
        }
        let number = TemplateCommands.versionNumber(of: template)
        if options.flag("json") {
            Output.json(TemplateCommands.summary(version: number, etag: etag, [("rollbackSource", .integer(source))]))
        } else {
            Output.data(
                "rolled back to version \(source): published as version \(TemplateCommands.versionText(number)) "
                    + "(ETag \(TextEscaping.terminal(etag)))\n")
        }
    }

    static let diff = AdminCommand(
        words: ["template", "diff"], synopsis: "A [B] [--server] [--json]",
        help: """
            Shows what changed from A to B, in words: conditions, parameter groups and parameters
            added, removed or changed (default values, conditional values, value types, descriptions).
            A and B are each a version number, `current` (the published template) or a template FILE
            (a file named like a number: ./12). With one argument, B is `current`: `diff 41` is what
            changed since version 41, and `diff current FILE` is what publishing FILE would change.
            Version metadata and ETags are not compared. --json prints an array of {"kind", "key",
            "field", "old", "new"}. Two files need no service account.
            """,
        options: TemplateCommands.common, arguments: 1...2
    ) { options, environment throws(AdminFailure) in
        // `diff A` is `diff A current`, as `git diff A` compares A with what is there now.
        let operands = options.positionals.count == 2 ? options.positionals : [options.positionals[0], "current"]
        // Only a diff that reads from Google needs the service account.
        var api: RemoteConfigAPI?
        var templates: [JSONValue] = []
        for operand in try operands.map(DiffOperand.init) {
            switch operand {
            case let .file(path):
                templates.append(try TemplateCommands.readFile(path).template)
            case let .published(version):
                let remote: RemoteConfigAPI
                if let api {
                    remote = api
                } else {
                    remote = try GoogleContext(options, environment: environment).remoteConfig(
                        server: options.flag("server"))
                    api = remote
                }
                templates.append(
                    try await GoogleContext.call { () async throws(GoogleError) in
                        try await remote.get(version: version).template
                    })
            }
        }
        let changes = TemplateDiff.changes(from: templates[0], to: templates[1])
        if options.flag("json") {
            Output.json(TemplateDiff.json(changes))
        } else {
            Output.data(TemplateDiff.text(changes))
        }
    }

    /// One side of a diff: a template at Google (`current` is version `nil`) or a file. Digits
    /// alone are always a version number: a file so named is given as `./12`.
    enum DiffOperand {
        case published(Int64?)
        case file(String)

        init(_ operand: String) throws(AdminFailure) {
            if operand == "current" {
                self = .published(nil)
            } else if !operand.isEmpty, operand.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) {
                self = .published(try ParsedOptions.integer(operand, what: "version"))
            } else {
                self = .file(operand)
            }
        }
    }
}
