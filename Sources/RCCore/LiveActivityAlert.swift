/// Reading `aps.alert` as iPhones get it: `title` and `body` as plain strings, or as localization
/// dictionaries (`{"loc-key": K, "loc-args": [...]}`, Apple's own Live Activity example), or the
/// older `title-loc-key`/`loc-key` members; a plain string alert is a title alone. Members the device
/// does not use (`subtitle`, `launch-image`, ...) are accepted and ignored.
///
/// A Linux device has no string tables: a localized text shows as its key with `loc-args` put in its
/// `%@` and `%N$@` placeholders (Apple's examples use the text itself as the key), cut to
/// ``LiveActivityMessage/maximumTextBytes``.
extension LiveActivityMessage {
    static func alert(_ aps: JSONValue, reader outer: FieldReader) throws(MessageError) -> Alert? {
        guard let value = aps["alert"] else { return nil }
        if value.stringValue != nil, let title = try outer.string(aps, "alert", maxBytes: maximumTextBytes) {
            return Alert(title: title, body: "")
        }
        guard value.objectMembers != nil else {
            throw outer.error("alert", "must be an object or a string, got \(value.typeName)")
        }
        var reader = outer
        reader.prefix = outer.prefix + "alert."
        // ActivityKit shows no alert without a title: refuse rather than send one that vanishes.
        guard let title = try text(value, "title", locKey: "title-loc-key", locArgs: "title-loc-args", reader) else {
            throw reader.missing("title")
        }
        guard let body = try text(value, "body", locKey: "loc-key", locArgs: "loc-args", reader) else {
            throw reader.missing("body")
        }
        // A sound is a name, or a dictionary for critical alerts (which a kiosk has no use for).
        let sound = value["sound"]?.stringValue.map { TextEscaping.truncated($0, maxBytes: 256) }
        return Alert(title: title, body: body, sound: sound)
    }

    /// `alert.<key>` as text: a string, or a localization dictionary; else the alert's own
    /// `<locKey>`/`<locArgs>` members (the pre-iOS 16 form); `nil` when none is there.
    private static func text(
        _ alert: JSONValue, _ key: String, locKey: String, locArgs: String, _ reader: FieldReader
    ) throws(MessageError) -> String? {
        if let dictionary = alert[key], dictionary.objectMembers != nil {
            var inner = reader
            inner.prefix = reader.prefix + key + "."
            guard let text = try localized(dictionary, key: "loc-key", args: "loc-args", inner) else {
                throw inner.missing("loc-key")
            }
            return text
        }
        if let text = try reader.string(alert, key, maxBytes: maximumTextBytes) { return text }
        return try localized(alert, key: locKey, args: locArgs, reader)
    }

    /// The text of a `loc-key` with its `loc-args`, or `nil` without a `loc-key`.
    private static func localized(_ container: JSONValue, key: String, args: String, _ reader: FieldReader)
        throws(MessageError) -> String?
    {
        guard let format = try reader.string(container, key, maxBytes: maximumTextBytes) else { return nil }
        var arguments: [String] = []
        if let list = container[args] {
            guard case let .array(items) = list else {
                throw reader.error(args, "must be an array, got \(list.typeName)")
            }
            for item in items {
                // Apple's are strings; a number is shown as its JSON.
                let text = item.stringValue ?? item.compactText
                arguments.append(TextEscaping.truncated(text, maxBytes: maximumTextBytes))
            }
        }
        return TextEscaping.truncated(substitute(format, arguments), maxBytes: maximumTextBytes)
    }

    /// `format` with `%@` replaced by the next argument, `%N$@` by the Nth, `%%` by `%`; a placeholder
    /// without its argument shows as nothing. One pass over the bytes: linear in the output.
    static func substitute(_ format: String, _ arguments: [String]) -> String {
        guard !arguments.isEmpty || format.utf8.contains(UInt8(ascii: "%")) else { return format }
        let bytes = Array(format.utf8)
        var out: [UInt8] = []
        var next = 0
        var i = 0
        while i < bytes.count {
            guard bytes[i] == UInt8(ascii: "%"), i + 1 < bytes.count else {
                out.append(bytes[i])
                i += 1
                continue
            }
            if bytes[i + 1] == UInt8(ascii: "%") {
                out.append(UInt8(ascii: "%"))
                i += 2
            } else if bytes[i + 1] == UInt8(ascii: "@") {
                if next < arguments.count { out += arguments[next].utf8 }
                next += 1
                i += 2
            } else {
                // %N$@: at most 3 digits (loc-args are few), then `$@`.
                var j = i + 1
                var position = 0
                while j < bytes.count, j - i <= 3, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[j]) {
                    position = position * 10 + Int(bytes[j] - UInt8(ascii: "0"))
                    j += 1
                }
                if j > i + 1, j + 1 < bytes.count, bytes[j] == UInt8(ascii: "$"), bytes[j + 1] == UInt8(ascii: "@") {
                    if position >= 1, position <= arguments.count { out += arguments[position - 1].utf8 }
                    i = j + 2
                } else {
                    out.append(bytes[i])
                    i += 1
                }
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
