import Glibc
import RCCore
import RCSystem

/// Writes to a file descriptor directly (stdio's globals are not concurrency-safe in Swift 6).
///
/// `out` and `err` take ``TerminalText``: every value interpolated into it is escaped for a terminal,
/// so no command can forget to. `raw` is for output whose exact bytes a command's contract defines
/// (`get`'s value, JSON, `list`'s formats), already escaped for its destination by the command.
enum Output {
    static func out(_ text: TerminalText) { write(1, text.text) }
    static func err(_ text: TerminalText) { write(2, text.text) }
    static func raw(_ text: String) { write(1, text) }

    private static func write(_ fd: Int32, _ text: String) {
        // A failure (EPIPE and friends: the reader went away) leaves nothing useful to do.
        _ = Posix.writeAll(fd, text)
    }
}

/// Text for a terminal. Literal parts are the program's own words and pass as they are; every
/// interpolated value is escaped with ``TextEscaping/terminal(_:)`` (newlines included, so a remote
/// value cannot forge a line like `stale: no`, move the cursor or reorder the display).
/// Interpolate another `TerminalText` to compose without escaping twice.
struct TerminalText: ExpressibleByStringInterpolation, Sendable {
    fileprivate(set) var text: String

    init(stringLiteral value: String) { text = value }

    init(stringInterpolation: StringInterpolation) { text = stringInterpolation.text }

    /// Text this program wrote itself (help, usage), possibly many lines: kept as it is.
    init(verbatim text: String) { self.text = text }

    /// Untrusted text that may span lines: each line escaped, the line breaks kept.
    init(lines: String) {
        // Split on the scalar: "\r\n" is one Character, and a Character split would not see it.
        text = lines.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).map {
            TextEscaping.terminal(String($0))
        }.joined(separator: "\n")
    }

    struct StringInterpolation: StringInterpolationProtocol {
        var text = ""

        init(literalCapacity: Int, interpolationCount: Int) { text.reserveCapacity(literalCapacity * 2) }

        mutating func appendLiteral(_ literal: String) { text += literal }

        mutating func appendInterpolation(_ value: TerminalText) { text += value.text }

        mutating func appendInterpolation(_ value: some Any) {
            text += TextEscaping.terminal(String(describing: value))
        }
    }

    static func + (lhs: TerminalText, rhs: TerminalText) -> TerminalText { TerminalText(verbatim: lhs.text + rhs.text) }
}

extension Sequence<TerminalText> {
    func joined(separator: TerminalText = "") -> TerminalText {
        TerminalText(verbatim: map(\.text).joined(separator: separator.text))
    }
}
