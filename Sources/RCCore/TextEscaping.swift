/// Escaping for each way text leaves the program: shell / systemd `EnvironmentFile=` assignments,
/// tab-separated listings, terminals, sd_notify `STATUS=`, log lines and hook environments.
///
/// Everything here works on Unicode scalars or UTF-8 bytes, never on `Character`s: a grapheme
/// cluster glues a quote to a following combining mark (`"` + U+0301 is one `Character`) and
/// makes `"\r\n"` one `Character`, so an escaper comparing whole `Character`s lets the quote or
/// the line break through. Every function here is linear in its input.
public enum TextEscaping {
    // MARK: - Shell and systemd EnvironmentFile

    /// Why a value cannot be written as an environment assignment.
    public enum Unrepresentable: Error, Equatable, Sendable, CustomStringConvertible {
        /// A NUL byte: shells drop it (bash warns, dash is silent) and systemd stops reading the file there.
        case nul
        /// Bytes that are not UTF-8: systemd refuses the whole file ("invalid UTF-8 value for key").
        case invalidUTF8

        public var description: String {
            switch self {
            case .nul: "it contains a NUL character, which neither a shell nor systemd can read back"
            case .invalidUTF8:
                "it is not valid UTF-8 or holds a Unicode noncharacter, which systemd's EnvironmentFile= refuses"
            }
        }
    }

    /// The value in double quotes with `\`, `"`, `$` and `` ` `` backslash-escaped, escaped byte by byte.
    ///
    /// That is the one quoting POSIX shells (`eval` in bash and dash) and systemd's `EnvironmentFile=`
    /// parser (src/basic/env-file.c) read back identically: inside double quotes both take every other
    /// byte (newlines, CR, tabs, `'`, `!`) literally, and both turn exactly these four escapes back into
    /// the character. Single quotes would not do: systemd does not join `'a'\''b'` the way a shell does.
    /// The UTF-8 output must be read in a UTF-8 or C locale (in GBK or Big5 a byte after a multibyte
    /// lead byte may be taken as part of that character, escapes included).
    public static func shellDoubleQuoted(_ value: String) throws(Unrepresentable) -> String {
        // systemd's utf8_is_valid() also refuses the noncharacters, and refuses the whole file for one.
        if value.unicodeScalars.contains(where: isNoncharacter) { throw .invalidUTF8 }
        var out: [UInt8] = [UInt8(ascii: "\"")]
        out.reserveCapacity(value.utf8.count + 2)
        for byte in value.utf8 {
            switch byte {
            case 0: throw .nul
            case UInt8(ascii: "\\"), UInt8(ascii: "\""), UInt8(ascii: "$"), UInt8(ascii: "`"):
                out.append(UInt8(ascii: "\\"))
            default: break
            }
            out.append(byte)
        }
        out.append(UInt8(ascii: "\""))
        return String(decoding: out, as: UTF8.self)
    }

    /// ``shellDoubleQuoted(_:)`` for bytes as they came off the wire: refuses NUL and invalid UTF-8.
    public static func shellDoubleQuoted(utf8 bytes: some Collection<UInt8>) throws(Unrepresentable) -> String {
        guard let value = String(validating: bytes, as: UTF8.self) else { throw .invalidUTF8 }
        return try shellDoubleQuoted(value)
    }

    /// U+FDD0...U+FDEF and the last two code points of every plane.
    static func isNoncharacter(_ scalar: Unicode.Scalar) -> Bool {
        (0xFDD0...0xFDEF).contains(scalar.value) || scalar.value & 0xFFFE == 0xFFFE
    }

    /// An environment variable name for a config key: ASCII letters upper-cased, ASCII digits and `_`
    /// kept, every other scalar `_`; a leading digit (or nothing) gets a `_` in front. Only ASCII is
    /// upper-cased, so no Unicode case mapping (`ſ` → `S`, `ﬁ` → `FI`) can turn a key into a name it
    /// does not spell.
    public static func environmentName(for key: String, prefix: String = "") -> String {
        var bytes = Array(prefix.utf8)
        for scalar in key.unicodeScalars {
            switch scalar.value {
            case 0x61...0x7A: bytes.append(UInt8(scalar.value - 0x20))
            case 0x41...0x5A, 0x30...0x39, 0x5F: bytes.append(UInt8(scalar.value))
            default: bytes.append(UInt8(ascii: "_"))
            }
        }
        var name = String(decoding: bytes, as: UTF8.self)
        if name.isEmpty || name.utf8.first.map({ (0x30...0x39).contains($0) }) == true { name = "_" + name }
        return name
    }

    /// `[A-Za-z_][A-Za-z0-9_]*`: what a shell accepts on the left of `=`.
    public static func isEnvironmentName(_ name: String) -> Bool {
        guard let first = name.utf8.first, !(0x30...0x39).contains(first) else { return false }
        return name.utf8.allSatisfy { byte in
            (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte)
                || byte == 0x5F
        }
    }

    /// Names whose value changes how a shell, the dynamic linker, an interpreter or systemd behaves,
    /// so a remote value must not set them: `eval` of `LD_PRELOAD=...`, `BASH_ENV=...` or `PATH=...`
    /// runs the sender's code. Checked on the upper-cased name.
    public static func isDangerousEnvironmentName(_ name: String) -> Bool {
        let name = name.uppercased()
        return dangerousNames.contains(name) || dangerousPrefixes.contains(where: name.hasPrefix)
    }

    static let dangerousNames: Set<String> = [
        // Shells (POSIX, bash, dash) and their start-up files, prompts, globbing and read-only variables.
        "_", "PATH", "IFS", "ENV", "BASH_ENV", "SHELL", "SHELLOPTS", "BASHOPTS", "GLOBIGNORE", "CDPATH", "FPATH",
        // PS0 is expanded, command substitutions included, before each command an interactive bash runs.
        "PS0", "PS1", "PS2", "PS3", "PS4", "PROMPT_COMMAND", "FCEDIT", "ZDOTDIR", "TEXTDOMAINDIR", "PROMPT_DIRTRIM",
        "HOME", "PWD", "OLDPWD", "OPTIND", "OPTARG",
        "OPTERR", "POSIXLY_CORRECT", "HISTFILE", "HISTCONTROL", "HISTIGNORE", "HISTSIZE", "HISTFILESIZE",
        "INPUTRC", "MAIL", "MAILCHECK", "MAILPATH", "SHLVL", "UID", "EUID", "PPID", "GROUPS", "RANDOM", "SRANDOM",
        "SECONDS", "LINENO", "FUNCNAME", "EPOCHREALTIME", "EPOCHSECONDS", "EXECIGNORE", "TIMEFORMAT", "TMOUT",
        "COMP_WORDBREAKS", "FIGNORE", "HOSTFILE", "HOSTNAME", "HOSTTYPE", "MACHTYPE", "OSTYPE", "COLUMNS", "LINES",
        // Identity, locale, time zone, temporary files, terminal.
        "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TZDIR", "TMPDIR", "TEMP", "TMP", "TERM", "TERMINFO",
        "TERMINFO_DIRS", "TERMCAP", "NLSPATH", "LOCPATH", "GCONV_PATH", "HOSTALIASES", "RES_OPTIONS", "LOCALDOMAIN",
        "GLIBC_TUNABLES", "MANPATH", "INFOPATH",
        // Interpreters and tools that load code or options from the environment.
        "NODE_OPTIONS", "NODE_PATH", "RUBYOPT", "RUBYLIB", "GEM_HOME", "GEM_PATH", "PERLLIB", "PERL5LIB",
        "PERL5OPT", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH", "LUA_PATH", "LUA_CPATH",
        "LUA_INIT", "TCLLIBPATH", "R_PROFILE", "R_PROFILE_USER", "EDITOR", "VISUAL", "PAGER", "BROWSER", "LESSOPEN",
        "LESSCLOSE", "LESS", "MANPAGER", "SYSTEMD_PAGER", "SYSTEMD_EDITOR", "GIT_SSH", "GIT_SSH_COMMAND",
        "GIT_EXEC_PATH", "GIT_CONFIG", "SSH_AUTH_SOCK", "SSH_ASKPASS", "SUDO_ASKPASS", "OPENSSL_CONF",
        "OPENSSL_ENGINES", "SSL_CERT_FILE", "SSL_CERT_DIR", "CURL_CA_BUNDLE", "HTTP_PROXY", "HTTPS_PROXY",
        "ALL_PROXY", "NO_PROXY", "FTP_PROXY", "KRB5_CONFIG", "KRB5CCNAME", "GNUPGHOME", "XAUTHORITY", "DISPLAY",
        "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "DBUS_SYSTEM_BUS_ADDRESS", "NOTIFY_SOCKET",
        "WATCHDOG_USEC", "WATCHDOG_PID", "INVOCATION_ID", "CREDENTIALS_DIRECTORY", "PKG_CONFIG_PATH", "SSLKEYLOGFILE",
    ]

    static let dangerousPrefixes: [String] = [
        "LD_",  // the dynamic linker: LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT
        "LC_", "BASH_", "BASH_FUNC_", "PYTHON", "PERL5", "PERL_", "MALLOC_", "GLIBC_", "DYLD_", "GCONV_", "XDG_",
        "SYSTEMD_", "LISTEN_", "JOURNAL_", "RCAGENT_", "GIT_", "SUDO_", "SSH_", "COMP_", "NPM_CONFIG_", "RUBY",
        "JAVA_",
    ]

    // MARK: - Terminal, tab-separated text, log lines

    /// `text` with every scalar that could move the cursor, end or split a line, switch a terminal
    /// mode or reorder what is displayed made visible: C0 controls (newline and tab included), DEL,
    /// C1 controls, U+2028/U+2029 and the bidirectional marks, embeddings, overrides and isolates.
    /// `\n`, `\r`, `\t` for those three, `\x1b` style for other C0 and DEL, `\u{202e}` style above.
    /// Backslash is left alone (a human reads it; use ``tabField(_:)`` where the text must be reversible).
    public static func terminal(_ text: String) -> String { visible(text, escapingBackslash: false) }

    /// One field of `rcagent list`'s tab-separated text: ``terminal(_:)``'s escapes plus `\\` for a
    /// backslash, so a value stays on one line and in one column and the escaping can be undone.
    public static func tabField(_ text: String) -> String { visible(text, escapingBackslash: true) }

    /// Remote text inside one log line: ``terminal(_:)``. One event stays one journal line and carries
    /// no ESC sequence to whoever reads the journal on a terminal.
    public static func logLine(_ text: String) -> String { visible(text, escapingBackslash: false) }

    /// An sd_notify `STATUS=` value: ``terminal(_:)`` (sd_notify separates assignments by newlines, so a
    /// newline would start a new one, `MAINPID=` or `WATCHDOG=trigger`), cut to at most `maxBytes` UTF-8
    /// bytes at a scalar boundary with `…` marking the cut.
    public static func notifyStatus(_ text: String, maxBytes: Int = 512) -> String {
        truncated(visible(text, escapingBackslash: false), maxBytes: maxBytes)
    }

    /// A piece of a remote body quoted into an error message (HTTP error bodies, an API's `message`):
    /// at most `maxBytes` of it, invalid UTF-8 replaced, ``terminal(_:)``-escaped, so the error can go to
    /// a log, the status line, the database and `rcagent fetch --wait` without carrying a line break or ESC.
    public static func snippet(_ bytes: some Collection<UInt8>, maxBytes: Int = 200) -> String {
        terminal(String(decoding: bytes.prefix(maxBytes), as: UTF8.self))
    }

    /// ``snippet(_:maxBytes:)`` for text already decoded.
    public static func snippet(_ text: String, maxBytes: Int = 200) -> String {
        terminal(truncated(text, maxBytes: maxBytes))
    }

    /// Whether `scalar` must be made visible before it reaches a terminal, a log or a line-oriented format.
    public static func needsEscaping(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x061C, 0x200E, 0x200F: true  // Arabic letter mark, left-to-right and right-to-left marks
        case 0x2028, 0x2029: true  // line and paragraph separators
        case 0x202A...0x202E, 0x2066...0x2069: true  // bidi embeddings, overrides and isolates
        default: false
        }
    }

    private static func visible(_ text: String, escapingBackslash: Bool) -> String {
        let backslash: Unicode.Scalar = "\\"
        guard text.unicodeScalars.contains(where: { needsEscaping($0) || (escapingBackslash && $0 == backslash) })
        else { return text }
        // Built as UTF-8 bytes: appending to a String.UnicodeScalarView one scalar at a time made this
        // quadratic (4.9 s for 1 MiB of escapes in a debug build).
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count + text.utf8.count / 4)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": out += Array(#"\n"#.utf8)
            case "\r": out += Array(#"\r"#.utf8)
            case "\t": out += Array(#"\t"#.utf8)
            case backslash where escapingBackslash: out += Array(#"\\"#.utf8)
            case _ where scalar.value < 0x80 && needsEscaping(scalar):
                out += Array("\\x\(hex(scalar.value, digits: 2))".utf8)
            case _ where needsEscaping(scalar):
                out += Array("\\u{\(hex(scalar.value, digits: 1))}".utf8)
            default: UTF8.encode(scalar) { out.append($0) }
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }

    /// At most `maxBytes` UTF-8 bytes, cut at a scalar boundary, `…` (3 bytes) marking a cut.
    public static func truncated(_ text: String, maxBytes: Int) -> String {
        guard text.utf8.count > maxBytes else { return text }
        // The longest prefix of whole scalars that leaves room for the 3 bytes of "…".
        var end = text.unicodeScalars.startIndex
        var used = 0
        for scalar in text.unicodeScalars {
            let size = UTF8.width(scalar)
            if used + size > maxBytes - 3 { break }
            used += size
            end = text.unicodeScalars.index(after: end)
        }
        return String(text.unicodeScalars[..<end]) + "…"
    }

    // MARK: - Hook environment

    /// `text` with every byte outside `A-Z a-z 0-9 - . _ ~` written as `%HH` (upper-case hex) of its
    /// UTF-8 encoding: `a b` → `a%20b`, `%` → `%25`, `é` → `%C3%A9`. Unambiguous in a space-separated
    /// list, free of NUL and line breaks, and undone by any URL percent-decoder.
    public static func percentEncoded(_ text: String) -> String {
        guard !text.utf8.allSatisfy(isUnreserved) else { return text }
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count * 3)
        let digits = Array("0123456789ABCDEF".utf8)
        for byte in text.utf8 {
            if isUnreserved(byte) {
                out.append(byte)
            } else {
                out += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 0xF)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte)
            || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
            || byte == UInt8(ascii: "~")
    }
}
