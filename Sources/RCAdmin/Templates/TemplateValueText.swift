import RCCore

/// How parameter values are shown to a reviewer.
public enum TemplateValueText {
    /// A `RemoteConfigParameterValue`: a static value as the text (JSON objects and arrays compact,
    /// other text quoted), `useInAppDefault` in words, managed values (rollouts, personalization)
    /// as their compact JSON; long values elided in the middle with their length.
    public static func parameterValue(_ value: JSONValue) -> String {
        if let members = value.objectMembers, members.count == 1 {
            switch (members[0].key, members[0].value) {
            case let ("value", .string(text)): return staticValue(text)
            case ("useInAppDefault", .bool(true)): return "(use in-app default)"
            default: break
            }
        }
        return TextEscaping.terminal(TemplateText.elided(value.compactText))
    }

    /// A static value: JSON objects and arrays compacted (the console's line breaks and spacing are
    /// not something a reviewer needs to read; member order is kept as written), anything else as a
    /// quoted string.
    public static func staticValue(_ text: String) -> String {
        if let first = text.utf8.first(where: { !isJSONSpace($0) }),
            first == UInt8(ascii: "{") || first == UInt8(ascii: "["),
            (try? JSONValue.parse(text)) != nil
        {
            return TextEscaping.terminal(TemplateText.elided(compacted(text)))
        }
        return TemplateText.quoted(TemplateText.elided(text))
    }

    /// Valid JSON `text` without the white space between tokens. Not a re-serialization: the parser
    /// sorts object members, and a reviewer should see them in the order the value has them.
    static func compacted(_ text: String) -> String {
        var out: [UInt8] = []
        var strings = JSONStringTracker()
        for byte in text.utf8 {
            if !strings.take(byte) && isJSONSpace(byte) { continue }
            out.append(byte)
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func isJSONSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }
}
