import RCCore
import TestSupport
import Testing

/// Each escaper of ``TextEscaping``, example by example. The shell / systemd round trip of arbitrary
/// text is ``ShellRoundTripTests``.
@Suite struct TextEscapingTests {
    // MARK: Shell and EnvironmentFile

    @Test(arguments: [
        ("plain", #""plain""#),
        ("", #""""#),
        (#"a"b"#, #""a\"b""#),
        ("$HOME `id` \\", #""\$HOME \`id\` \\""#),
        ("it's", #""it's""#),
        ("two\nlines\r\n", "\"two\nlines\r\n\""),
        // The issue's example: a quote followed by a combining mark is one Character, but two scalars;
        // the quote must still be escaped.
        ("\"\u{301}; touch /tmp/x; : \"\u{301}", "\"\\\"\u{301}; touch /tmp/x; : \\\"\u{301}\""),
        ("`\u{301}id`\u{301}", "\"\\`\u{301}id\\`\u{301}\""),
        ("$\u{301}(id)", "\"\\$\u{301}(id)\""),
        ("\\\u{301}\"", "\"\\\\\u{301}\\\"\""),
    ])
    func doubleQuotesOverScalars(_ value: String, _ expected: String) throws {
        #expect(try TextEscaping.shellDoubleQuoted(value) == expected)
    }

    @Test func refusesNUL() {
        #expect(throws: TextEscaping.Unrepresentable.nul) { try TextEscaping.shellDoubleQuoted("a\u{0}b") }
        #expect(throws: TextEscaping.Unrepresentable.nul) { try TextEscaping.shellDoubleQuoted(utf8: [0x61, 0, 0x62]) }
    }

    @Test(arguments: [
        [0xC3] as [UInt8], [0xC3, 0x28], [0xED, 0xA0, 0x80], [0xF8, 0x88, 0x80, 0x80, 0x80], [0x22, 0xFF, 0x22],
        [0xC0, 0xA2],  // an overlong `"`: a decoder that accepted it would hand the shell a bare quote
    ])
    func refusesInvalidUTF8(_ bytes: [UInt8]) {
        #expect(throws: TextEscaping.Unrepresentable.invalidUTF8) { try TextEscaping.shellDoubleQuoted(utf8: bytes) }
    }

    // Swift refuses these noncharacters in literals, so they are built from their code points.
    @Test(arguments: [UInt32(0xFFFE), 0xFFFF, 0xFDD0, 0xFDEF, 0x1FFFF, 0x10FFFE])
    func refusesWhatSystemdCallsInvalidUTF8(_ value: UInt32) throws {
        let text = "a" + String(Character(try #require(Unicode.Scalar(value))))
        #expect(throws: TextEscaping.Unrepresentable.invalidUTF8) { try TextEscaping.shellDoubleQuoted(text) }
    }

    @Test(arguments: [
        ("kiosk_url", "", "KIOSK_URL"),
        ("weird.key-ä", "", "WEIRD_KEY__"),
        ("1st-key", "", "_1ST_KEY"),
        ("", "", "_"),
        ("kiosk_url", "RC_", "RC_KIOSK_URL"),
        ("1st", "RC_", "RC_1ST"),
        // No Unicode case mapping: these upper-case to PATH and SHELL under String.uppercased().
        ("ﬁle", "", "_LE"),
        ("ſhell", "", "_HELL"),
        ("e\u{301}", "", "E_"),
    ])
    func environmentNames(_ key: String, _ prefix: String, _ expected: String) {
        #expect(TextEscaping.environmentName(for: key, prefix: prefix) == expected)
    }

    @Test(arguments: [
        "PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "IFS", "BASH_ENV", "ENV", "PS1", "PS4", "HOME", "SHELL",
        "SHELLOPTS", "BASHOPTS", "GLOBIGNORE", "CDPATH", "PROMPT_COMMAND", "TMPDIR", "LANG", "LC_ALL", "PYTHONPATH",
        "PYTHONSTARTUP", "PERL5OPT", "NODE_OPTIONS", "BASH_FUNC_X", "GCONV_PATH", "GLIBC_TUNABLES", "_", "path", "PS0",
        "FCEDIT", "ZDOTDIR", "SSLKEYLOGFILE",
    ])
    func dangerousNames(_ name: String) {
        #expect(TextEscaping.isDangerousEnvironmentName(name))
    }

    @Test(arguments: ["KIOSK_URL", "RC_PATH", "RC_LD_PRELOAD", "PSK", "HISTORY_URL", "NODE_NAME", "WELCOME_MESSAGE"])
    func harmlessNames(_ name: String) {
        #expect(!TextEscaping.isDangerousEnvironmentName(name))
    }

    @Test func environmentNameSyntax() {
        #expect(TextEscaping.isEnvironmentName("RC_"))
        #expect(TextEscaping.isEnvironmentName("_x1"))
        #expect(!TextEscaping.isEnvironmentName(""))
        #expect(!TextEscaping.isEnvironmentName("1X"))
        #expect(!TextEscaping.isEnvironmentName("A-B"))
        #expect(!TextEscaping.isEnvironmentName("É"))
    }

    // MARK: Terminal, tab-separated text, log lines, sd_notify

    @Test(arguments: [
        ("plain text, é 👩‍💻", "plain text, é 👩‍💻"),
        ("a\nb", #"a\nb"#),
        ("a\r\nb", #"a\r\nb"#),
        ("\u{1b}[2J\u{7}", #"\x1b[2J\x07"#),
        ("\u{0}\u{b}\u{c}\u{7f}", #"\x00\x0b\x0c\x7f"#),
        ("x\u{85}y\u{9b}", #"x\u{85}y\u{9b}"#),
        ("a\u{2028}b\u{2029}", #"a\u{2028}b\u{2029}"#),
        ("\u{202e}evil\u{202c}", #"\u{202e}evil\u{202c}"#),
        ("\u{2066}\u{2067}\u{2068}\u{2069}\u{200f}", #"\u{2066}\u{2067}\u{2068}\u{2069}\u{200f}"#),
        ("back\\slash\t", #"back\slash\t"#),
        // A combining mark after a line break does not hide the break.
        ("\n\u{301}stale: no", #"\n"# + "\u{301}stale: no"),
    ])
    func terminal(_ text: String, _ expected: String) {
        #expect(TextEscaping.terminal(text) == expected)
        #expect(TextEscaping.logLine(text) == expected)
    }

    @Test func tabFieldsEscapeBackslashToo() {
        #expect(TextEscaping.tabField(#"C:\dir"#) == #"C:\\dir"#)
        #expect(TextEscaping.tabField("k\tremote\tv\r\nforged\tremote\tx") == #"k\tremote\tv\r\nforged\tremote\tx"#)
        #expect(TextEscaping.tabField("\u{b}\u{c}\u{85}\u{2028}") == #"\x0b\x0c\u{85}\u{2028}"#)
    }

    @Test func escapedTextHasNoLineBreakOrControl() {
        var all = String.UnicodeScalarView()
        for value in UInt32(0)...0x3000 { if let scalar = Unicode.Scalar(value) { all.append(scalar) } }
        let escaped = TextEscaping.terminal(String(all))
        #expect(!escaped.unicodeScalars.contains(where: TextEscaping.needsEscaping))
    }

    @Test func notifyStatusIsOneBoundedLine() {
        let status = TextEscaping.notifyStatus("p\nMAINPID=1\nWATCHDOG=trigger\nX")
        #expect(status == #"p\nMAINPID=1\nWATCHDOG=trigger\nX"#)
        let long = TextEscaping.notifyStatus(String(repeating: "é", count: 1_000), maxBytes: 512)
        #expect(long.utf8.count <= 512)
        #expect(long.hasSuffix("…"))
        #expect(TextEscaping.notifyStatus("short", maxBytes: 512) == "short")
    }

    @Test func truncatesAtScalarBoundaries() {
        let text = "a👩‍💻b"
        for limit in 4...text.utf8.count {
            let cut = TextEscaping.truncated(text, maxBytes: limit)
            #expect(cut.utf8.count <= limit)
        }
        #expect(TextEscaping.truncated(text, maxBytes: text.utf8.count) == text)
    }

    @Test func snippetsOfBodies() {
        #expect(TextEscaping.snippet(Array("oops\u{1b}[31m\r\nforged".utf8)) == #"oops\x1b[31m\r\nforged"#)
        #expect(TextEscaping.snippet(Array(repeating: UInt8(ascii: "x"), count: 1_000)).utf8.count == 200)
        #expect(TextEscaping.snippet("\u{1b}]0;title\u{7}") == #"\x1b]0;title\x07"#)
    }

    // MARK: Cost

    /// Hostile text costs time linear in its size: each escaper's time for 64 times the text stays under 512
    /// times its time for the text. A quadratic escaper takes 4,096 times (the one that appended to a
    /// String.UnicodeScalarView took 20 s for 2 MiB); a linear one 64 to about 200 once the larger text no
    /// longer fits the caches. A ratio within one run, each side the fastest of three, so a loaded machine
    /// slows both sides alike.
    @Test func costIsLinearInTheInput() throws {
        let unit = "\"\u{301}\r\n\u{1b}[2J\u{202e}$`\\ é👩‍💻 a"
        let small = String(repeating: unit, count: (32 << 10) / unit.utf8.count)
        let large = String(repeating: small, count: 64)
        let escapers: [(String, (String) throws -> Void)] = [
            ("terminal", { _ = TextEscaping.terminal($0) }),
            ("tabField", { _ = TextEscaping.tabField($0) }),
            ("notifyStatus", { _ = TextEscaping.notifyStatus($0) }),
            ("snippet", { _ = TextEscaping.snippet($0, maxBytes: $0.utf8.count) }),
            ("shellDoubleQuoted", { _ = try TextEscaping.shellDoubleQuoted($0) }),
            ("percentEncoded", { _ = TextEscaping.percentEncoded($0) }),
            ("environmentName", { _ = TextEscaping.environmentName(for: $0) }),
            ("truncated", { _ = TextEscaping.truncated($0, maxBytes: $0.utf8.count - 1) }),
        ]
        let clock = ContinuousClock()
        func fastest(_ body: (String) throws -> Void, _ text: String) throws -> Double {
            var best = Duration.seconds(3600)
            for _ in 0..<3 { best = min(best, try clock.measure { try body(text) }) }
            return Double(best.components.seconds) + Double(best.components.attoseconds) / 1e18
        }
        for (name, escaper) in escapers {
            let ratio = try fastest(escaper, large) / max(try fastest(escaper, small), 1e-6)
            #expect(ratio < 512, "\(name): 64 times the text took \(ratio) times as long")
        }
    }

    // MARK: Hook environment

    @Test(arguments: [
        ("kiosk_url", "kiosk_url"),
        ("a b", "a%20b"),
        ("100%", "100%25"),
        ("é", "%C3%A9"),
        ("a\nb\u{0}", "a%0Ab%00"),
        ("x.y-z~_", "x.y-z~_"),
        ("p\nMAINPID=1", "p%0AMAINPID%3D1"),
    ])
    func percentEncoding(_ text: String, _ expected: String) {
        #expect(TextEscaping.percentEncoded(text) == expected)
    }

    @Test func percentEncodingIsInjective() {
        // Decoding gives the bytes back, so two keys never encode alike.
        for key in ["a b", "a%20b", "a+b", "", "%", "%%", "é", "e\u{301}", "\u{0}"] {
            let encoded = TextEscaping.percentEncoded(key)
            #expect(percentDecoded(encoded) == Array(key.utf8))
            #expect(!encoded.utf8.contains(UInt8(ascii: " ")))
        }
    }
}
