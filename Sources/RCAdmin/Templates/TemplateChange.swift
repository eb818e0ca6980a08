import RCCore

/// One difference between two templates, for `rcadmin template diff`: a condition, group or
/// parameter added, removed, or one field of it changed.
public struct TemplateChange: Sendable, Equatable {
    /// What changed; the raw values sort the output (conditions, then groups, then parameters).
    public enum Kind: String, Sendable, Comparable {
        case condition, group, parameter

        public static func < (a: Kind, b: Kind) -> Bool { a.rawValue < b.rawValue }
    }

    public let kind: Kind
    /// The condition name, group name or parameter key.
    public let key: String
    /// The field that changed (`defaultValue`, `conditionalValues.<condition>`, `valueType`,
    /// `description`, `group`, `expression`, `priority`, `tagColor`, ...); `nil` when the whole
    /// condition, group or parameter was added or removed.
    public let field: String?
    /// The values before and after, as they are in the templates (`nil`: absent).
    public let old: JSONValue?
    public let new: JSONValue?
    /// The change in words, one line, values escaped for a terminal and long ones elided.
    public let text: String

    /// `{"kind", "key", "field", "old", "new"}`, absent values as null: the `--json` form.
    public var json: JSONValue {
        .object([
            ("kind", .string(kind.rawValue)), ("key", .string(key)), ("field", field.map { .string($0) } ?? .null),
            ("old", old ?? .null), ("new", new ?? .null),
        ])
    }
}
