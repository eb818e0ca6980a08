import RCCore

/// `rcagent get KEY [--type T] [--default V] [--json]`: active → defaults → `--default`.
enum GetCommand {
    static let spec = CommandSpec(
        "get", arguments: ["KEY"], summary: "Print a value (active remote value, else default, else --default).",
        options: [
            .value("type", "TYPE", "read the value as string|bool|number|int|json (exit 65 if it is not one)"),
            .value("default", "VALUE", "value to use when the key has none"),
            .flag("json", "print {\"key\", \"value\", \"source\"} as JSON"),
        ], run: run)

    static func run(_ invocation: Invocation) throws(CLIError) -> Int32 {
        let arguments = invocation.arguments
        let key = arguments.positionals[0]
        var type = ValueType.string
        if let name = arguments.value("type") {
            guard let parsed = ValueType(rawValue: name) else {
                throw .usage(
                    "--type must be one of \(ValueType.allCases.map(\.rawValue).joined(separator: ", ")), got '\(name)'",
                    command: spec)
            }
            type = parsed
        }
        let found = try invocation.values().value(forKey: key)
        guard let value = found ?? arguments.value("default").map({ ConfigValue(key: key, text: $0, source: .flag) })
        else {
            throw .failure("no value for key '\(key)' (not in the active config or the defaults)")
        }
        let rendered: String
        do { rendered = try value.rendered(as: type) } catch { throw .badValue(error.description) }
        if invocation.json {
            var json: [(key: String, value: JSONValue)] = [
                ("key", .string(key)), ("value", .string(value.text)), ("source", .string(value.source.rawValue)),
            ]
            if type != .string { json.append(("type", .string(type.rawValue))) }
            if type != .string { json.append(("typed", (try? JSONValue.parse(rendered)) ?? .string(rendered))) }
            Output.raw(JSONValue.object(json).compactText + "\n")
        } else {
            Output.raw(rendered + "\n")  // the value exactly, by contract (docs/rcagent.md, get)
        }
        return ExitCode.ok
    }
}
