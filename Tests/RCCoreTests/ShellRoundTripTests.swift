import Foundation
import RCCore
import TestSupport
import Testing

/// Property test of ``TextEscaping/shellDoubleQuoted(_:)``: seeded random text (combining marks after
/// quotes, ZWJ sequences, variation selectors, CR, LF, CRLF, U+2028, controls, quotes, `$`, backtick,
/// backslash, `!`, astral scalars) written as `NAME="..."` lines is read back byte for byte by real
/// `bash` (UTF-8 and C locales) and `dash` under `eval`, and by systemd's own EnvironmentFile parser
/// (`load_env_file` from libsystemd-shared, the code PID 1 runs for `EnvironmentFile=`). All values
/// of a round go through one shell invocation, so the test stays fast.
@Suite struct ShellRoundTripTests {
    static let valuesPerRound = 400

    @Test(arguments: [UInt64(0x5eed), 0xC0FFEE, 0xBAD_5EED])
    func arbitraryTextRoundTrips(seed: UInt64) throws {
        var generator = SplitMix64(seed: seed)
        var values: [String] = [
            "\"\u{301}; touch \"$PWNED\"; : \"\u{301}", "`\u{301}touch \"$PWNED\"`\u{301}",
            "$\u{301}(touch \"$PWNED\")", "\"\u{301}\u{302}`touch \"$PWNED\"`", "\\\u{301}",
            "\r\n", "a\r\nb\tc", "'\u{301}", "!!", "$(echo pwned)", "\\", "\\\n", " lead and trail ", "# not a comment",
            "👩‍👩‍👧‍👦", "❤️", "\u{2028}\u{2029}\u{85}", "\u{1b}[2J",
        ]
        while values.count < Self.valuesPerRound { values.append(Self.randomText(&generator)) }
        try Self.assertRoundTrip(values.map { Array($0.utf8) })
    }

    /// Bytes as they could come off the wire: invalid UTF-8 and NUL are refused, everything else round-trips.
    @Test(arguments: [UInt64(1), 2])
    func arbitraryBytesAreRefusedOrRoundTrip(seed: UInt64) throws {
        var generator = SplitMix64(seed: seed)
        var accepted: [[UInt8]] = []
        var refused = 0
        for _ in 0..<Self.valuesPerRound * 2 {
            var bytes = Array(randomText(&generator).utf8)
            // Corrupt some: a stray continuation byte, a truncated sequence, an overlong quote, a NUL.
            switch UInt8.random(in: 0..<6, using: &generator) {
            case 0: bytes.insert(0x80, at: Int.random(in: 0...bytes.count, using: &generator))
            case 1: bytes.append(0xE2)
            case 2: bytes += [0xC0, 0xA2]
            case 3: bytes.insert(0, at: Int.random(in: 0...bytes.count, using: &generator))
            default: break
            }
            do {
                _ = try TextEscaping.shellDoubleQuoted(utf8: bytes)
                accepted.append(bytes)
            } catch {
                #expect(String(validating: bytes, as: UTF8.self) == nil || bytes.contains(0))
                refused += 1
            }
        }
        #expect(refused > 0 && accepted.count > 100)  // both paths were taken
        try Self.assertRoundTrip(accepted)
    }

    private func randomText(_ generator: inout SplitMix64) -> String { Self.randomText(&generator) }

    static func randomText(_ generator: inout SplitMix64) -> String {
        let pieces: [String] = [
            "\"", "'", "\\", "$", "`", "!", "\n", "\r", "\r\n", "\t", " ", "#", ";", "&", "|", "(", ")", "{", "}", "*",
            "?", "~", "=", "%", "${x}", "$(id)", "\\n", "\u{200D}", "\u{FE0F}", "\u{FE0E}", "\u{2028}", "\u{2029}",
            "\u{85}", "\u{202E}", "\u{1b}", "\u{7f}", "👩‍💻", "🏳️‍🌈", "é", "e\u{301}", "ﬁ", "\u{FEFF}",
        ]
        var text = String.UnicodeScalarView()
        for _ in 0..<Int.random(in: 0...24, using: &generator) {
            switch UInt8.random(in: 0..<10, using: &generator) {
            case 0...3:
                text.append(contentsOf: pieces.randomElement(using: &generator)!.unicodeScalars)
            case 4:
                text.append(Unicode.Scalar(UInt32.random(in: 0x300...0x36F, using: &generator))!)  // combining marks
            case 5:
                text.append(Unicode.Scalar(UInt8.random(in: 1...0x1F, using: &generator)))  // C0 controls but NUL
            case 6:
                text.append(Unicode.Scalar(UInt8.random(in: 0x20...0x7E, using: &generator)))
            case 7:
                text.append(Unicode.Scalar(UInt32.random(in: 0x1F300...0x1FAFF, using: &generator))!)  // emoji
            default:
                // Any scalar but surrogates and the noncharacters (those are refused, see TextEscapingTests).
                var value: UInt32
                repeat {
                    value = UInt32.random(in: 1...0x10FFFF, using: &generator)
                } while (0xD800...0xDFFF)
                    .contains(value) || (0xFDD0...0xFDEF).contains(value) || value & 0xFFFE == 0xFFFE
                text.append(Unicode.Scalar(value)!)
            }
        }
        return String(text)
    }

    /// Writes `V0="..."`, `V1="..."`, ... and checks every reader gives `values` back exactly.
    static func assertRoundTrip(_ values: [[UInt8]]) throws {
        try TemporaryDirectory.with { dir in
            var file: [UInt8] = []
            for (index, value) in values.enumerated() {
                file += Array("V\(index)=".utf8) + Array(try TextEscaping.shellDoubleQuoted(utf8: value).utf8) + [10]
            }
            let path = try dir.write("values.env", bytes: file)
            // eval, then print every value NUL-terminated (values never hold NUL).
            let script =
                #"eval "$(cat "$1")"; i=0; while [ "$i" -lt "$2" ]; do eval "printf '%s\0' \"\$V$i\""; i=$((i+1)); done"#
            let expected = values.flatMap { $0 + [UInt8(0)] }
            for (shell, locale) in [("/bin/bash", "C.UTF-8"), ("/bin/bash", "C"), ("/bin/dash", "C.UTF-8")] {
                // A value that escaped its quotes would run `touch "$PWNED"`.
                let output = try run(
                    shell, ["-c", script, "sh", path, String(values.count)],
                    environment: ["LC_ALL": locale, "PWNED": dir.file("pwned")], directory: dir.path)
                #expect(!pathExists(dir.file("pwned")), "\(shell) ran a command from a value")
                #expect(output == expected, "\(shell) in \(locale)")
                if output != expected { reportFirstDifference(values, output) }
            }
            let systemd = try #require(try SystemdEnvironmentFile.load(path), "systemd's parser not available")
            for (index, value) in values.enumerated() {
                #expect(systemd["V\(index)"] == value, "systemd read V\(index) differently")
            }
            #expect(systemd.count == values.count)
        }
    }

    private static func reportFirstDifference(_ values: [[UInt8]], _ output: [UInt8]) {
        let read = output.split(separator: 0, omittingEmptySubsequences: false).map(Array.init)
        for (index, value) in values.enumerated() where index >= read.count || read[index] != value {
            Issue.record("first difference at V\(index): wrote \(value), read \(index < read.count ? read[index] : [])")
            return
        }
    }

    /// Runs in `directory`: should an escape fail, whatever the shell then does stays in the test's directory.
    static func run(_ path: String, _ arguments: [String], environment: [String: String], directory: String) throws
        -> [UInt8]
    {
        let process = Process()
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.environment = environment
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(path) exited \(process.terminationStatus)")
        return Array(data)
    }
}
