import RCCore
import RCGoogle

/// `rcadmin template get` and `template publish`: a template to a file with its ETag, and that file
/// back with exactly that `If-Match`, so an edit based on an older template is refused instead of
/// overwriting what someone else published since.
enum TemplateCommands {
    /// The options of every `template` command: the Google ones and `--server`.
    static let common = AdminCommand.googleOptions + [.flag("server")]

    static let get = AdminCommand(
        words: ["template", "get"], synopsis: "[--server] [--version N] [-o FILE] [--json]",
        help: """
            Reads the published Remote Config template (the client one devices fetch; with --server the
            server template), or version N of it. Without -o the template goes to stdout as indented
            JSON and its ETag to stderr. With -o FILE it is written to FILE (atomically) with an
            "etag" member holding the ETag, which `template publish FILE` sends as If-Match; the
            summary goes to stdout. --json prints {"version", "etag", "template"} (or "file" with -o).
            A file of an older version carries that version's ETag, so publishing it is refused: use
            `template rollback N` to publish an older version again.
            """,
        options: common + [.value("version", "N"), .value("output", "FILE", short: "o")], arguments: 0...0
    ) { options, environment throws(AdminFailure) in
        let context = try GoogleContext(options, environment: environment)
        let api = context.remoteConfig(server: options.flag("server"))
        let version = try options.integer("version")
        let (template, etag) = try await GoogleContext.call { () async throws(GoogleError) in
            try await api.get(version: version)
        }
        let number = versionNumber(of: template)
        // The file keeps the ETag inside it; on a terminal the ETag goes to stderr, so stdout is the
        // template alone and `template get > file` captures nothing else.
        if let path = options.value("output") {
            do { try TemplateFile.write(path: path, template: template, etag: etag) } catch {
                throw .failure("cannot write \(TextEscaping.terminal(path)): \(error)")
            }
            if options.flag("json") {
                Output.json(summary(version: number, etag: etag, [("file", .string(path))]))
            } else {
                Output.data(
                    "wrote version \(versionText(number)) to \(TextEscaping.terminal(path)) "
                        + "(ETag \(TextEscaping.terminal(etag)))\n")
            }
        } else if options.flag("json") {
            Output.json(summary(version: number, etag: etag, [("template", template)]))
        } else {
            Output.data(Output.terminalSafeJSON(TemplateFile.prettyText(template)) + "\n")
            Output.note("version \(versionText(number)), ETag \(TextEscaping.terminal(etag))")
        }
    }

    static let publish = AdminCommand(
        words: ["template", "publish"],
        synopsis: "FILE [--server] [--validate-only] [--force] [--description TEXT] [--update-file] [--json]",
        help: """
            Publishes the template in FILE (as `template get -o FILE` writes it) with If-Match set to
            the file's "etag". When someone published since that ETag was read, Google refuses the
            publish (HTTP 409 or 412): read the template again, re-apply the edit and publish that.
            A file without an "etag" is refused unless --force, which sends If-Match: * and
            overwrites whatever is published. --validate-only has Google check the template and
            publishes nothing. --description sets the new version's description. --update-file
            rewrites FILE after a successful publish with the template as published and its new
            ETag (what `template get -o FILE` would write now), so the next publish from it works;
            without it FILE is left as it was (it may be checked in). Prints the new version number
            and ETag; --json prints {"published", "version", "etag"}.
            """,
        options: common + [
            .flag("validate-only"), .flag("force"), .value("description", "TEXT"), .flag("update-file"),
        ],
        arguments: 1...1
    ) { options, environment throws(AdminFailure) in
        let path = options.positionals[0]
        let validateOnly = options.flag("validate-only")
        if validateOnly && options.flag("update-file") {
            throw .usage("--update-file rewrites the file after a publish; --validate-only publishes nothing")
        }
        var (template, etag) = try readFile(path)
        if let description = options.value("description") { template = described(template, description) }
        // Refused here rather than by RemoteConfigAPI so the message can name the file and the way out.
        guard etag != nil || options.flag("force") else {
            throw .failure(
                "\(TextEscaping.terminal(path)) has no \"etag\": publishing it could overwrite what was published "
                    + "since it was made. Edit a file from `rcadmin template get -o FILE`, or publish with --force")
        }
        let context = try GoogleContext(options, environment: environment)
        let api = context.remoteConfig(server: options.flag("server"))
        let (published, newETag) = try await GoogleContext.call(hint: staleHint) { () async throws(GoogleError) in
            try await api.publish(template, etag: etag, validateOnly: validateOnly, force: options.flag("force"))
        }
        let number = versionNumber(of: published)
        if validateOnly {
            if options.flag("json") {
                Output.json(.object([("published", .bool(false)), ("valid", .bool(true))]))
            } else {
                Output.data("valid: Google accepts \(TextEscaping.terminal(path)) (nothing was published)\n")
            }
            return
        }
        // The whole file is rewritten (not just its "etag"): it then holds what was published, version
        // metadata included, byte for byte what `template get -o` writes, so a diff of it is honest.
        if options.flag("update-file") {
            do { try TemplateFile.write(path: path, template: published, etag: newETag) } catch {
                throw .failure("published, but cannot update \(TextEscaping.terminal(path)): \(error)")
            }
        }
        if options.flag("json") {
            Output.json(summary(version: number, etag: newETag, [("published", .bool(true))]))
        } else {
            Output.data("published version \(versionText(number)) (ETag \(TextEscaping.terminal(newETag)))\n")
        }
    }

    /// What a refused `If-Match` means for the operator.
    static let staleHint: @Sendable (GoogleError) -> String? = { error in
        error.status == 409 || error.status == 412
            ? "someone else published since, or this file was published already: run template get -o FILE "
                + "again (publish --update-file keeps the file's ETag current)" : nil
    }

    /// A template file, or the failure naming what is wrong with it and where.
    static func readFile(_ path: String) throws(AdminFailure) -> (template: JSONValue, etag: String?) {
        do { return try TemplateFile.read(path: path) } catch { throw .failure(error.description) }
    }

    /// `template` with `version.description` set (the only input field of `version`).
    static func described(_ template: JSONValue, _ description: String) -> JSONValue {
        var members = template.objectMembers ?? []
        var version = template["version"]?.objectMembers ?? []
        Members.set("description", .string(description), in: &version)
        Members.set("version", .object(version), in: &members)
        return .object(members)
    }

    /// The template's `version.versionNumber` (an int64 as a string, as Google writes it).
    static func versionNumber(of template: JSONValue) -> String? { template["version"]?["versionNumber"]?.stringValue }

    static func versionText(_ number: String?) -> String { number.map(TextEscaping.terminal) ?? "(unnumbered)" }

    /// `{"version": N, "etag": E, extra...}` for `--json`: the number as a JSON number when it is one.
    static func summary(version: String?, etag: String, _ extra: [(key: String, value: JSONValue)]) -> JSONValue {
        let number: JSONValue = version.map { text in Int64(text).map(JSONValue.integer) ?? .string(text) } ?? .null
        return .object([("version", number), ("etag", .string(etag))] + extra)
    }
}

extension GoogleContext {
    /// Runs one call to Google and turns its error into the command's failure; `hint` may add what
    /// the operator should do about a particular answer.
    static func call<T: Sendable>(
        hint: @Sendable (GoogleError) -> String? = { _ in nil }, _ body: () async throws(GoogleError) -> T
    ) async throws(AdminFailure) -> T {
        do { return try await body() } catch { throw failure(error, hint: hint(error)) }
    }
}
