import Glibc
import RCCore

/// Where `rcadmin` writes: data on stdout, notes and errors on stderr (so `rcadmin template get >
/// file` captures the template alone). Both go through `write(2)`: `Glibc.stderr` is not usable
/// under strict concurrency, and unbuffered stdout keeps the two streams in the order written.
enum Output {
    /// Writes `text` to stdout as it is (callers escape what came from elsewhere).
    static func data(_ text: String) { write(fd: 1, text) }

    /// One line on stderr.
    static func note(_ line: String) { write(fd: 2, line + "\n") }

    /// `text` on stderr as it is (an error report, already escaped and ending in a newline).
    static func error(_ text: String) { write(fd: 2, text) }

    /// `value` as compact JSON plus a newline: the `--json` form of every command.
    static func json(_ value: JSONValue) { data(terminalSafeJSON(value.compactText) + "\n") }

    /// JSON text with the scalars a terminal would act on (DEL, C1 controls, bidi controls, line
    /// separators) written as `\uXXXX`. The JSON writer escapes what JSON requires and the Unicode
    /// line separators, not the rest, so a template value carrying a right-to-left override would
    /// otherwise reorder what a reviewer sees. Every such scalar can only be inside a string (JSON's own syntax is ASCII), where
    /// `\uXXXX` means the same: the output is still the same JSON.
    static func terminalSafeJSON(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0.value >= 0x7F && TextEscaping.needsEscaping($0) }) else {
            return text
        }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if scalar.value >= 0x7F && TextEscaping.needsEscaping(scalar) {
                out.append(contentsOf: JSONValue.unicodeEscape(scalar).unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    private static func write(fd: Int32, _ text: String) {
        var text = text
        text.withUTF8 { buffer in
            guard let base = buffer.baseAddress else { return }
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(fd, base + offset, buffer.count - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return }  // a closed pipe: nothing more can be said
                offset += written
            }
        }
    }
}
