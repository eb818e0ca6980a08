import RCCore

/// `rcagent list [--prefix P] [--json] [--format text|env] [--env-prefix P]`.
enum ListCommand {
    static let spec = CommandSpec(
        "list", summary: "List every key (active ∪ defaults) with its value and source.",
        options: [
            .value("prefix", "P", "only keys starting with P"),
            .flag("json", "print {\"KEY\": {\"value\", \"source\"}} as JSON"),
            .value("format", "FORMAT", "text (key, source, value; tab-separated) or env (NAME=\"value\" lines)"),
            .value("env-prefix", "P", "with --format env: put P in front of every NAME (e.g. RC_)"),
        ], run: run)

    static func run(_ invocation: Invocation) throws(CLIError) -> Int32 {
        let format = invocation.arguments.value("format") ?? "text"
        guard format == "text" || format == "env" else {
            throw .usage("--format must be text or env, got '\(format)'", command: spec)
        }
        let envPrefix = invocation.arguments.value("env-prefix")
        if let envPrefix {
            guard format == "env", !invocation.json else {
                throw .usage("--env-prefix goes with --format env", command: spec)
            }
            guard TextEscaping.isEnvironmentName(envPrefix) else {
                throw .usage(
                    "--env-prefix must be a shell name prefix ([A-Za-z_][A-Za-z0-9_]*), got '\(envPrefix)'",
                    command: spec)
            }
        }
        let values = try invocation.values().allValues(prefix: invocation.arguments.value("prefix") ?? "")
        if invocation.json {
            let members = values.map { value in
                (
                    key: value.key,
                    value: JSONValue.object([
                        ("value", .string(value.text)), ("source", .string(value.source.rawValue)),
                    ])
                )
            }
            Output.raw(JSONValue.object(members).compactText + "\n")
        } else if format == "env" {
            let listing = EnvironmentFormat.listing(values.map { ($0.key, $0.text) }, prefix: envPrefix ?? "")
            Output.raw(listing.text)
            for skipped in listing.skipped {
                Output.err("Warning: key '\(skipped.key)' left out: \(skipped.reason)\n")
            }
            return listing.skipped.isEmpty ? ExitCode.ok : ExitCode.failure
        } else {
            var out = ""
            for value in values {
                out +=
                    TextEscaping.tabField(value.key) + "\t" + value.source.rawValue + "\t"
                    + TextEscaping.tabField(value.text) + "\n"
            }
            Output.raw(out)
        }
        return ExitCode.ok
    }
}

/// `NAME="value"` lines that `eval` in a POSIX shell and systemd's `EnvironmentFile=` both read back
/// exactly (see ``TextEscaping/shellDoubleQuoted(_:)``), leaving out what cannot be written safely.
enum EnvironmentFormat {
    struct Listing {
        /// The assignments, one per line.
        var text = ""
        /// Keys left out, in key order, with why.
        var skipped: [(key: String, reason: String)] = []
    }

    /// Leaves out, each with a reason: a value with NUL; a key whose NAME is dangerous to set from a
    /// remote value (`PATH`, `LD_PRELOAD`, `BASH_ENV`, ...; see ``TextEscaping/isDangerousEnvironmentName(_:)``)
    /// unless a prefix makes it harmless; and every key of a group that maps to the same NAME, since
    /// whichever line came last would silently win.
    static func listing(_ values: [(key: String, text: String)], prefix: String = "") -> Listing {
        var listing = Listing()
        var keysByName: [String: [String]] = [:]
        for value in values {
            keysByName[TextEscaping.environmentName(for: value.key, prefix: prefix), default: []].append(value.key)
        }
        for value in values {
            let name = TextEscaping.environmentName(for: value.key, prefix: prefix)
            if let keys = keysByName[name], keys.count > 1 {
                let others = keys.filter { !$0.sameBytes(as: value.key) }.map { "'\(TextEscaping.terminal($0))'" }
                listing.skipped.append(
                    (value.key, "\(name) is also the name of \(others.joined(separator: ", ")); neither is set"))
                continue
            }
            if TextEscaping.isDangerousEnvironmentName(name) {
                listing.skipped.append(
                    (value.key, "\(name) would change how the shell or programs run; use --env-prefix (e.g. RC_)"))
                continue
            }
            do {
                listing.text += name + "=" + (try TextEscaping.shellDoubleQuoted(value.text)) + "\n"
            } catch {
                listing.skipped.append((value.key, "its value cannot be written: \(error)"))
            }
        }
        return listing
    }
}
