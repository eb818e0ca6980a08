import RCCore
import RCSystem

/// The file `rcadmin template get -o FILE` writes and `rcadmin template publish FILE` reads: the
/// Remote Config REST `RemoteConfig` JSON with one extra top-level member, `"etag"`, as the Admin
/// SDKs' template JSON has it. The ETag is what `publish` sends as `If-Match`, so a file edited
/// from an older template is refused by the server instead of silently overwriting a newer one.
///
/// The text is meant to live in git: 2-space indentation, one member per line, members in a fixed
/// (sorted) order at every level, a final newline. Writing the same template twice gives the same
/// bytes, and a one-value edit is a one-line diff.
public enum TemplateFile {
    /// The member that carries the ETag. It is never sent back as part of the template.
    public static let etagMember = "etag"

    /// The file's text for `template` (a JSON object) and, when known, its `etag`. An `"etag"`
    /// member already in `template` is replaced, so the file never carries two.
    public static func text(template: JSONValue, etag: String?) throws(TemplateError) -> String {
        guard var members = template.objectMembers else {
            throw TemplateError("template: expected a JSON object, got \(template.typeName)")
        }
        members.removeAll { $0.key.sameBytes(as: etagMember) }
        if let etag { members.append((etagMember, .string(etag))) }
        var out = ""
        writePretty(.object(members), indent: 0, to: &out)
        out += "\n"
        return out
    }

    /// Splits a template file's bytes back into the template (without `"etag"`) and the ETag.
    /// `path` only names the file in errors, which also give the line and column of bad JSON.
    public static func parse(_ bytes: some Collection<UInt8>, path: String) throws(TemplateError) -> (
        template: JSONValue, etag: String?
    ) {
        let place = TextEscaping.terminal(path)
        let json: JSONValue
        do { json = try JSONValue.parse(bytes) } catch {
            throw TemplateError("\(place): \(TextEscaping.terminal(error.description))")
        }
        guard var members = json.objectMembers else {
            throw TemplateError("\(place): expected a Remote Config template (a JSON object), got \(json.typeName)")
        }
        var etag: String?
        if let index = members.firstIndex(where: { $0.key.sameBytes(as: etagMember) }) {
            switch members[index].value {
            case let .string(text) where !text.isEmpty && !TemplateText.hasControlCharacters(text):
                etag = text
            case let .string(text):
                throw TemplateError.invalid("\(place): \"etag\"", text, "must be a non-empty single-line string")
            case .null:
                etag = nil
            case let other:
                throw TemplateError("\(place): \"etag\" must be a string, got \(other.typeName)")
            }
            members.remove(at: index)
        }
        let template = JSONValue.object(members)
        try TemplateShape.check(template, place: place)
        return (template, etag)
    }

    /// The largest file read: the largest template answer taken from Google (``GoogleAPI``'s
    /// response limit), far beyond the size Remote Config accepts. A larger file is refused by its
    /// size, before it costs the memory and time of parsing it.
    public static let maximumFileSize = 16 << 20

    /// Reads and parses the file at `path`.
    public static func read(path: String) throws(TemplateError) -> (template: JSONValue, etag: String?) {
        let bytes: [UInt8]?
        do { bytes = try FileBytes.read(path, limit: maximumFileSize) } catch {
            throw TemplateError(TextEscaping.terminal(error.description))
        }
        guard let bytes else { throw TemplateError("\(TextEscaping.terminal(path)): no such file") }
        return try parse(bytes, path: path)
    }

    /// Writes the file durably (temporary file, fsync, rename): an interrupted `template get -o`
    /// leaves the previous file, never half a template that `publish` would then send.
    public static func write(path: String, template: JSONValue, etag: String?) throws(TemplateError) {
        let text = try text(template: template, etag: etag)
        do { try FileBytes.writeAtomically(path, Array(text.utf8)) } catch { throw TemplateError(error.description) }
    }

    /// Pretty JSON: 2-space indentation, `"key": value`, members sorted by key at every level (a
    /// template built in code comes out in the same order as one read back from the file), empty
    /// containers as `{}` and `[]`. Scalars and strings are written exactly as ``JSONValue`` does.
    /// Containers deeper than ``prettyDepth`` are written compact, on one line.
    public static func prettyText(_ value: JSONValue) -> String {
        var out = ""
        writePretty(value, indent: 0, to: &out)
        return out
    }

    /// The deepest level that is indented. A real template nests 9 levels at most (a rollout value
    /// in a parameter group); below that, indentation would multiply the size of what the server
    /// sent by the depth: an array nested 100 deep holding tiny elements, 65 KB gzipped on the
    /// wire, became 1.7 GB of text. With indentation stopping here, every element costs at most
    /// 2 × 10 spaces and a line break more than in the compact form: the output is at most about
    /// 12 times the template's compact size (itself bounded by the response limit), whatever its shape.
    public static let prettyDepth = 10

    private static func writePretty(_ value: JSONValue, indent: Int, to out: inout String) {
        if indent >= 2 * prettyDepth {
            value.write(to: &out)
            return
        }
        let inner = String(repeating: " ", count: indent + 2)
        switch value {
        case let .array(items) where !items.isEmpty:
            out += "[\n"
            for (index, item) in items.enumerated() {
                out += inner
                writePretty(item, indent: indent + 2, to: &out)
                out += index == items.count - 1 ? "\n" : ",\n"
            }
            out += String(repeating: " ", count: indent) + "]"
        case let .object(members) where !members.isEmpty:
            // Stable sort by the same order the parser uses, so parse → write → parse is a fixed point.
            let sorted = members.enumerated().sorted { a, b in
                a.element.key.sameBytes(as: b.element.key)
                    ? a.offset < b.offset : a.element.key.precedesByBytes(b.element.key)
            }
            out += "{\n"
            for (position, entry) in sorted.enumerated() {
                out += inner
                JSONValue.writeString(entry.element.key, to: &out)
                out += ": "
                writePretty(entry.element.value, indent: indent + 2, to: &out)
                out += position == sorted.count - 1 ? "\n" : ",\n"
            }
            out += String(repeating: " ", count: indent) + "}"
        default:
            value.write(to: &out)
        }
    }
}

/// The checks the Admin SDKs make before publishing, made when a template is read, so a broken
/// file is refused with its place before any request: `parameters` and `parameterGroups` objects,
/// `conditions` an array, each parameter and group an object.
enum TemplateShape {
    static func check(_ template: JSONValue, place: String) throws(TemplateError) {
        func expect(_ value: JSONValue?, _ what: String, object: Bool) throws(TemplateError) {
            guard let value else { return }
            switch (value, object) {
            case (.object, true), (.array, false): return
            default:
                throw TemplateError(
                    "\(place): \(what) must be a JSON \(object ? "object" : "array"), got \(value.typeName)")
            }
        }
        try expect(template["conditions"], "\"conditions\"", object: false)
        try expect(template["parameters"], "\"parameters\"", object: true)
        try expect(template["parameterGroups"], "\"parameterGroups\"", object: true)
        for (key, parameter) in template["parameters"]?.objectMembers ?? [] {
            try expect(parameter, "parameter \(TemplateText.quoted(key))", object: true)
        }
        for (name, group) in template["parameterGroups"]?.objectMembers ?? [] {
            try expect(group, "parameter group \(TemplateText.quoted(name))", object: true)
            try expect(group["parameters"], "parameter group \(TemplateText.quoted(name)) \"parameters\"", object: true)
            for (key, parameter) in group["parameters"]?.objectMembers ?? [] {
                try expect(
                    parameter, "parameter \(TemplateText.quoted(key)) in group \(TemplateText.quoted(name))",
                    object: true)
            }
        }
        guard case let .array(conditions)? = template["conditions"] else { return }
        for (index, condition) in conditions.enumerated() {
            guard condition.objectMembers != nil, case let .string(name)? = condition["name"], !name.isEmpty else {
                throw TemplateError("\(place): condition \(index + 1) must be an object with a non-empty \"name\"")
            }
        }
    }
}
