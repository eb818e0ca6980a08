import RCCore

/// Why a Remote Config template, a template file or an update-key edit was refused: the field or
/// place, the offending value (escaped, so it can go to a terminal as is) and what was expected.
public struct TemplateError: Error, CustomStringConvertible, Sendable, Equatable {
    public let reason: String

    public init(_ reason: String) { self.reason = reason }

    /// `field "value": why`, the value quoted and escaped by ``TemplateText/quoted(_:)``.
    public static func invalid(_ field: String, _ value: String, _ why: String) -> TemplateError {
        TemplateError("\(field) \(TemplateText.quoted(value)): \(why)")
    }

    public var description: String { reason }
}

/// How template values are written into messages, diffs and tables meant for a terminal.
public enum TemplateText {
    /// `text` as a JSON string literal (quotes, backslashes and C0 controls escaped), then with
    /// whatever else could act on a terminal (C1 controls, bidi overrides, line separators) made
    /// visible: the quoted form shows exactly where a value starts and ends, spaces included.
    public static func quoted(_ text: String) -> String {
        var out = ""
        JSONValue.writeString(text, to: &out)
        return TextEscaping.terminal(out)
    }

    /// `text` cut to at most `limit` Unicode scalars by removing its middle, which is replaced by
    /// `…(N chars)…` giving the full length: the start and the end of a long value are what a
    /// reviewer recognises (a URL's host, a version at the end of a file name).
    public static func elided(_ text: String, limit: Int = 120) -> String {
        let scalars = Array(text.unicodeScalars)
        guard scalars.count > limit else { return text }
        let marker = "…(\(scalars.count) chars)…"
        let keep = max(limit - marker.unicodeScalars.count, 2)
        let head = (keep + 1) / 2
        let tail = keep - head
        var out = String.UnicodeScalarView()
        out.append(contentsOf: scalars[0..<head])
        out.append(contentsOf: marker.unicodeScalars)
        out.append(contentsOf: scalars[(scalars.count - tail)...])
        return String(out)
    }

    /// Whether `text` holds a scalar that must not be in a one-line value: anything
    /// ``TextEscaping/needsEscaping(_:)`` names (C0 and C1 controls, DEL, line separators, bidi
    /// controls).
    static func hasControlCharacters(_ text: String) -> Bool {
        text.unicodeScalars.contains { TextEscaping.needsEscaping($0) }
    }
}
