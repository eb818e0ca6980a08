import Glibc
import RCCore
import RCSystem

/// One line per event on stderr with an sd-daemon `<N>` priority prefix and no timestamp:
/// journald adds the time and reads the priority. Errors read "Failed to X: reason".
public struct Logger: Sendable {
    public enum Priority: Int, Sendable {
        case error = 3, warning = 4, notice = 5, info = 6, debug = 7
    }

    private let sink: @Sendable (String) -> Void

    public init(sink: @escaping @Sendable (String) -> Void = Logger.standardError) {
        self.sink = sink
    }

    /// Writes one escaped, bounded line at `priority`.
    public func log(_ priority: Priority, _ message: String) {
        // One event, one line: messages quote remote text (keys, errors, HTTP bodies, hook output),
        // and a line break in it (LF, CR, NEL, U+2028...) would start a forged journal line, an ESC
        // would reach whoever reads the journal on a terminal. Escaped here so no caller can forget.
        // And bounded: journald cuts a stdout line at LineMax= (48 KiB by default) and reads the rest
        // as a new line with its own `<N>` prefix, so a 49 KiB remote key in "keys changed" forged an
        // entry at priority 0 (emerg, which journald also sends to every terminal with wall).
        let text = TextEscaping.truncated(TextEscaping.logLine(message), maxBytes: Self.maximumMessageBytes)
        sink("<\(priority.rawValue)>\(text)\n")
    }

    /// The longest message written, in UTF-8 bytes, `…` included: far below journald's LineMax= (48 KiB).
    public static let maximumMessageBytes = 4096

    public func error(_ message: String) { log(.error, message) }
    public func warning(_ message: String) { log(.warning, message) }
    public func notice(_ message: String) { log(.notice, message) }
    public func info(_ message: String) { log(.info, message) }

    /// Writes to fd 2 (`Glibc.stderr` is not concurrency-safe); a failed write is dropped, there is
    /// nowhere left to report it.
    public static let standardError: @Sendable (String) -> Void = { line in
        _ = Posix.writeAll(2, line)
    }
}
