import RCCore

/// `rcagent list [--prefix P] [--json] [--format text|env]`.
enum ListCommand {
    static let spec = CommandSpec(
        "list", summary: "List every key (active ∪ defaults) with its value and source.",
        options: [
            .value("prefix", "P", "only keys starting with P"),
            .flag("json", "print {\"KEY\": {\"value\", \"source\"}} as JSON"),
            .value("format", "FORMAT", "text (key, source, value; tab-separated) or env (KEY=\"value\" lines)"),
        ], run: run)

    static func run(_ invocation: Invocation) throws(CLIError) -> Int32 {
        let format = invocation.arguments.value("format") ?? "text"
        guard format == "text" || format == "env" else {
            throw .usage("--format must be text or env, got '\(format)'", command: spec)
        }
        let values = try invocation.values().allValues(prefix: invocation.arguments.value("prefix") ?? "")
        var out = ""
        if invocation.json {
            let members = values.map { value in
                (
                    key: value.key,
                    value: JSONValue.object([
                        ("value", .string(value.text)), ("source", .string(value.source.rawValue)),
                    ])
                )
            }
            out = JSONValue.object(members).compactText + "\n"
        } else if format == "env" {
            for value in values { out += EnvironmentFormat.line(key: value.key, value: value.text) + "\n" }
        } else {
            for value in values { out += "\(value.key)\t\(value.source.rawValue)\t\(escaped(value.text))\n" }
        }
        Output.out(out)
        return ExitCode.ok
    }

    /// Keeps one value on one line in the text listing.
    private static func escaped(_ text: String) -> String {
        guard text.contains(where: { $0 == "\n" || $0 == "\t" || $0 == "\\" || $0 == "\r" }) else { return text }
        var out = ""
        for c in text {
            switch c {
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            case "\\": out += "\\\\"
            default: out.append(c)
            }
        }
        return out
    }
}

/// `KEY="value"` lines that both `eval` in a POSIX shell and systemd's `EnvironmentFile=` read back exactly.
enum EnvironmentFormat {
    /// Upper-cases the key and maps every character outside `[A-Z0-9_]` to `_`; a leading digit gets a `_` prefix.
    static func name(for key: String) -> String {
        var name = String(
            key.uppercased().unicodeScalars.map { scalar -> Character in
                let c = Character(scalar)
                return (c.isASCII && (c.isLetter || c.isNumber)) || c == "_" ? c : "_"
            })
        if name.isEmpty || name.first!.isNumber { name = "_" + name }
        return name
    }

    /// Double quotes, with `\`, `"`, `$` and backtick escaped: the set both shells and systemd unescape.
    static func line(key: String, value: String) -> String {
        var quoted = "\""
        for c in value {
            if c == "\\" || c == "\"" || c == "$" || c == "`" { quoted.append("\\") }
            quoted.append(c)
        }
        return name(for: key) + "=" + quoted + "\""
    }
}
