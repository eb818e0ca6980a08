import Foundation
import Glibc
import TestSupport
import Testing

/// Issue 14, items 1, 4 and 5: remote text leaving the program. Each test serves hostile text
/// through a real source to a real daemon and checks every exit it can take: `eval` of
/// `rcagent list --format env` in bash and dash and systemd's EnvironmentFile reader, the `list`
/// text form, sd_notify datagrams, `rcagent status` and `fetch --wait` output, the log, hooks.
@Suite struct SecurityTextOutputTests {
    static let escape = UInt8(0x1B)

    // MARK: Item 1: shell / EnvironmentFile injection

    @Test func aRemoteValueCannotEscapeTheEnvFormatOrForgeListLines() throws {
        let sandbox = try Sandbox()
        let pwned = sandbox.root.appendingPathComponent("pwned").path
        // Each breaks out of Character-based escaping: a quote, backtick, `$` or backslash followed by
        // a combining mark is one Character; "\r\n" is one Character.
        let hostile: [String: String] = [
            "q": "\"\u{301}; touch \(pwned); : \"\u{301}",
            "b": "`\u{301}touch \(pwned)`\u{302}",
            "d": "$\u{301}(touch \(pwned))",
            "s": "\\\u{301}\"; touch \(pwned); : \"\u{301}",
            "zwj": "\"\u{200D}\u{FE0F}; touch \(pwned); : \"\u{200D}",
            "crlf": "v\r\nforged\tremote\tevil\u{2028}\u{85}",
            "lf": "v\nLD_PRELOAD=/tmp/evil.so",
            "ld_preload": "/tmp/evil.so",
            "path": "/tmp/evil",
            "a.b": "one", "a_b": "two",
            "kiosk_url": "https://example.com/kiosk",
        ]
        try sandbox.publish(document(hostile, version: "1"))
        let daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--wait").status == 0, "\(daemon.log)")

        // Without a prefix: dangerous names and colliding names are left out, with a warning, exit 1.
        let env = try sandbox.cli("list", "--format", "env")
        #expect(env.status == 1)
        for name in ["LD_PRELOAD", "PATH", "A_B"] {
            // (A line of a multi-line value may start with `LD_PRELOAD=`, inside quotes: that is the `lf` value.)
            #expect(!env.stdout.hasPrefix(name + "=") && !env.stdout.contains("\"\n\(name)="), "\(name) was set")
            #expect(env.stderr.contains(name), "no warning names \(name): \(env.stderr)")
        }
        let names = ["Q", "B", "D", "S", "ZWJ", "CRLF", "LF", "KIOSK_URL", "GREETING"]
        let expected = ["q", "b", "d", "s", "zwj", "crlf", "lf", "kiosk_url"].map { hostile[$0]! } + ["hello"]
        // The README's usage, literally, in both shells; values printed NUL-separated.
        let script =
            #"eval "$("$RCAGENT" list --format env --config "$CONFIG")"; printf '%s\0' "#
            + names.map { "\"$\($0)\"" }
            .joined(separator: " ") + #" "${LD_PRELOAD-unset}""#
        for shell in ["/bin/bash", "/bin/dash"] {
            let result = try sandbox.run(
                shell, ["-c", script],
                environment: ["RCAGENT": Binaries.url("rcagent").path, "CONFIG": sandbox.configPath])
            #expect(result.stdout == (expected + ["unset"]).map { $0 + "\0" }.joined(), "\(shell) read other values")
            // One hostile value at a time too: a value that broke the shell's parse would hide the others.
            for key in ["q", "b", "d", "s", "zwj"] {
                let one = try sandbox.run(
                    shell, ["-c", #"eval "$("$RCAGENT" list --format env --prefix "$KEY" --config "$CONFIG")""#],
                    environment: ["RCAGENT": Binaries.url("rcagent").path, "CONFIG": sandbox.configPath, "KEY": key])
                #expect(one.status == 0, "\(shell), \(key): \(one.stderr)")
            }
            #expect(!FileManager.default.fileExists(atPath: pwned), "\(shell) ran a command from a remote value")
        }
        // systemd's own EnvironmentFile= reader sees the same, and no LD_PRELOAD.
        let envFile = sandbox.root.appendingPathComponent("values.env").path
        try sandbox.write(env.stdout, to: envFile)
        let systemd = try #require(try SystemdEnvironmentFile.load(envFile), "libsystemd-shared not installed")
        for (name, value) in zip(names, expected) { #expect(systemd[name] == Array(value.utf8), "systemd: \(name)") }
        #expect(systemd["LD_PRELOAD"] == nil && systemd["PATH"] == nil)

        // With a prefix the same keys are harmless and set, exactly.
        let prefixed = try sandbox.cli("list", "--format", "env", "--env-prefix", "RC_")
        #expect(prefixed.stdout.contains("RC_LD_PRELOAD=\"/tmp/evil.so\"\n"))
        #expect(prefixed.stdout.contains("RC_PATH=\"/tmp/evil\"\n"))
        #expect(!prefixed.stdout.contains("RC_A_B="), "two keys named RC_A_B: neither is set")
        #expect(prefixed.status == 1)
        #expect(try sandbox.cli("list", "--format", "env", "--env-prefix", "1X").status == 64)

        // The text form: one line per key, three fields each, nothing forged.
        let text = try sandbox.cli("list")
        let lines = text.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect(lines.count == hostile.count + 3, "\(text.stdout)")  // + the three defaults
        #expect(lines.allSatisfy { $0.split(separator: "\t", omittingEmptySubsequences: false).count == 3 })
        #expect(!lines.contains { $0.hasPrefix("forged") || $0.hasPrefix("LD_PRELOAD") })
        #expect(text.stdout.unicodeScalars.allSatisfy { $0 != "\r" && $0 != "\u{2028}" && $0 != "\u{85}" })
        #expect(lines.contains("crlf\tremote\t" + #"v\r\nforged\tremote\tevil\u{2028}\u{85}"#))
        #expect(daemon.stop() == 0)
    }

    // MARK: Item 4: sd_notify and terminal injection

    @Test func aParameterNameCannotInjectNotifyAssignmentsOrForgeStatusLines() throws {
        let sandbox = try Sandbox()
        let daemon = try sandbox.startServing()

        // A template whose parameter name is quoted into the fetch error, and from there into the
        // status line, the log, `rcagent status` and `fetch --wait`.
        let name = "p\nMAINPID=1\nWATCHDOG=trigger\nstale:        no\n\u{1b}]0;owned\u{7}\u{1b}[2J\u{202E}X"
        let template = try JSONSerialization.data(
            withJSONObject: ["parameters": [name: 5], "version": ["versionNumber": "2"]])
        try sandbox.publish(String(decoding: template, as: UTF8.self))
        let fetch = try sandbox.cli("fetch", "--force", "--wait")
        #expect(fetch.status == 1)
        #expect(fetch.stderr.hasPrefix("Error: ") && fetch.stderr.split(separator: "\n").count == 1, "\(fetch.stderr)")
        #expect(fetch.stderr.contains(#"p\nMAINPID=1\nWATCHDOG=trigger"#), "\(fetch.stderr)")
        #expect(!Array(fetch.stderr.utf8).contains(Self.escape))

        // Every datagram holds only the daemon's own assignments; the hostile status arrived (escaped).
        let messages = daemon.notify.messages(until: { $0.contains("last fetch failed") })
        #expect(messages.last?.contains(#"MAINPID=1\nWATCHDOG=trigger"#) == true, "\(messages)")
        for message in messages {
            for line in message.split(separator: "\n", omittingEmptySubsequences: false) {
                #expect(
                    ["READY=1", "WATCHDOG=1", "STOPPING=1"].contains(String(line)) || line.hasPrefix("STATUS="),
                    "injected notify assignment: \(line)")
                #expect(!Array(line.utf8).contains(Self.escape) && line.utf8.count <= 520)
            }
        }

        // `rcagent status`: one stale line (the real one), no ESC, no bidi override.
        let status = try sandbox.cli("status")
        let lines = status.stdout.split(separator: "\n")
        #expect(lines.filter { $0.hasPrefix("stale:") }.count == 1, "\(status.stdout)")
        #expect(!Array(status.stdout.utf8).contains(Self.escape))
        #expect(!status.stdout.unicodeScalars.contains("\u{202E}"))
        // Shown, escaped: JSON-quoted where the document error names the key, or by the terminal layer.
        #expect(
            status.stdout.contains(#"\u001b]0;owned\u0007"#) || status.stdout.contains(#"\x1b]0;owned\x07"#),
            "\(status.stdout)")

        // The log: one event per line, no ESC; the daemon still serves its last good values.
        #expect(!Array(daemon.log.utf8).contains(Self.escape))
        #expect(daemon.log.split(separator: "\n").allSatisfy { $0.hasPrefix("<") }, "\(daemon.log)")
        #expect(try sandbox.cli("get", "key_0").stdout == "v1\n")

        // A stale reason sent over the socket reaches `status` only through the terminal layer.
        let client = try SocketClient(path: sandbox.socketPath)
        let reason = "x\nstale:        no\n\u{1b}]0;owned\u{7}\u{202E}"
        let request = JSONValueText.object(["op": "mark-stale", "reason": reason])
        #expect(client.request(request)?["ok"] as? Bool == true)
        let marked = try sandbox.cli("status")
        #expect(marked.stdout.split(separator: "\n").filter { $0.hasPrefix("stale:") }.count == 1, "\(marked.stdout)")
        #expect(!Array(marked.stdout.utf8).contains(Self.escape) && !marked.stdout.unicodeScalars.contains("\u{202E}"))
        #expect(marked.stdout.contains(#"\x1b]0;owned\x07"#), "\(marked.stdout)")
        #expect(daemon.stop() == 0)
    }

    @Test func anHTTPErrorBodyReachesNoTerminalWithItsEscapes() throws {
        let sandbox = try Sandbox()
        let server = try ConfigServer(in: sandbox)
        try sandbox.writeConfig(extra: "[Source]\nType=http\nURL=\(server.url)\n[Agent]\nFetchTimeout=2s")
        try server.serve(Sandbox.document(version: 1))
        let daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--wait").status == 0)
        try server.setMode([
            "kind": "status", "status": 500, "body": "\u{1b}]0;owned\u{7}\u{1b}[2Jboom\r\nstale:        no\n",
        ])
        let fetch = try sandbox.cli("fetch", "--force", "--wait")
        #expect(fetch.status == 1)
        #expect(fetch.stderr.contains(#"\x1b]0;owned\x07\x1b[2Jboom\r\nstale:"#), "\(fetch.stderr)")
        #expect(!Array(fetch.stderr.utf8).contains(Self.escape) && fetch.stderr.split(separator: "\n").count == 1)
        let status = try sandbox.cli("status")
        #expect(!Array(status.stdout.utf8).contains(Self.escape))
        #expect(status.stdout.split(separator: "\n").filter { $0.hasPrefix("stale:") }.count == 1)
        #expect(!Array(daemon.log.utf8).contains(Self.escape))
        #expect(try sandbox.cli("get", "key_0").stdout == "v1\n", "the last good values are served")
        #expect(daemon.stop() == 0)
    }

    /// A key long enough to pass journald's LineMax= (48 KiB): journald cuts the line there and
    /// reads what follows as a new line with its own `<N>` prefix, so `<0>` at each possible cut
    /// (the bytes before the key vary with the timing text) forged an emergency entry. Every log
    /// line stays far below the cut.
    @Test func aLongRemoteKeyCannotForgeAJournalEntry() throws {
        let sandbox = try Sandbox()
        let daemon = try sandbox.startServing()
        let lineMax = 48 * 1024
        var key = [UInt8](repeating: UInt8(ascii: "k"), count: lineMax * 26)
        for (cut, before) in zip(1...25, 100...124) {
            let forged = Array("<0>FORGED emergency".utf8)
            key.replaceSubrange(cut * lineMax - before..<cut * lineMax - before + forged.count, with: forged)
        }
        try sandbox.publish(Sandbox.document(version: 2, extra: [String(decoding: key, as: UTF8.self): "v"]))
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        #expect(daemon.log.contains("Activated template 2"), "\(daemon.log.prefix(500))")
        let longest = daemon.log.split(separator: "\n").map(\.utf8.count).max() ?? 0
        #expect(longest <= 4 + 4096, "the longest log line has \(longest) bytes")
        #expect(try sandbox.cli("get", "key_0").stdout == "v2\n")
        #expect(daemon.stop() == 0)
    }

    // MARK: Item 5: hooks on large changes

    @Test func aHookSeesEveryKeyOfALargeActivationUnambiguously() throws {
        let (sandbox, hooks) = try HookTests().sandbox(timeout: "20s")
        let out = sandbox.root.appendingPathComponent("seen").path
        try HookTests().hook(
            "50-record", in: hooks,
            """
            n=$(cat "\(out)/n" 2>/dev/null || echo 0); n=$((n+1))
            printf '%s' "$RCAGENT_CHANGED_KEYS" > "\(out)/keys.$n"
            printf '%s %s' "$RCAGENT_CHANGED_KEYS_COMPLETE" "$RCAGENT_CHANGED_KEYS_COUNT" > "\(out)/complete.$n"
            cat > "\(out)/stdin.$n"
            echo $n > "\(out)/n"
            """)
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)

        // 6,000 keys, with spaces and percent signs: as one space-joined list ~150 KiB, past the
        // kernel's 128 KiB limit on one environment string.
        var entries: [String: String] = [:]
        for i in 0..<6_000 { entries["key with space \(i) 100%"] = "v\(i)" }
        let started = ContinuousClock.now
        try sandbox.publish(document(entries, version: "1"))
        let daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--wait").status == 0)
        #expect(eventually(30) { (try? String(contentsOfFile: out + "/n", encoding: .utf8)) == "1\n" })
        let elapsed = ContinuousClock.now - started
        #expect(!daemon.log.contains("Failed to run hook"), "\(daemon.log)")
        let complete = try String(contentsOfFile: out + "/complete.1", encoding: .utf8)
        #expect(complete == "no 6000")
        let keysText = try String(contentsOfFile: out + "/keys.1", encoding: .utf8)
        #expect(keysText.utf8.count <= 64 * 1024 && !keysText.isEmpty)
        let listed = keysText.split(separator: " ").map { String(decoding: percentDecoded(String($0)), as: UTF8.self) }
        #expect(Set(listed).count == listed.count && Set(listed).isSubset(of: entries.keys))
        let stdin = try Data(contentsOf: URL(fileURLWithPath: out + "/stdin.1"))
        let json = try #require(JSONSerialization.jsonObject(with: stdin) as? [String: Any])
        let changes = try #require(json["changes"] as? [String: [String: Any]])
        #expect(Set(changes.keys) == Set(entries.keys), "stdin carries every changed key")

        // A small change with keys that space-joining made ambiguous: complete and exact.
        let small = ["a b": "1", "a%20b": "2", "a": "3", "b": "4"]
        try sandbox.publish(document(entries.merging(small) { $1 }, version: "2"))
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        #expect(eventually(30) { (try? String(contentsOfFile: out + "/n", encoding: .utf8)) == "2\n" })
        let smallKeys = try String(contentsOfFile: out + "/keys.2", encoding: .utf8).split(separator: " ").map {
            String(decoding: percentDecoded(String($0)), as: UTF8.self)
        }
        #expect(try String(contentsOfFile: out + "/complete.2", encoding: .utf8) == "yes 4")
        #expect(smallKeys.sorted() == small.keys.sorted(), "\(smallKeys)")
        print("6,000-key activation to hook done: \(elapsed)")
        #expect(daemon.stop() == 0)
    }

    // MARK: Helpers

    /// A fetch response (`state`, `templateVersion`, `entries`) as the file source reads it.
    func document(_ entries: [String: String], version: String) throws -> String {
        let data = try JSONSerialization.data(
            withJSONObject: ["state": "UPDATE", "templateVersion": version, "entries": entries], options: [.sortedKeys])
        return String(decoding: data, as: UTF8.self)
    }

}

/// A JSON object's text from Foundation, for requests written by hand.
enum JSONValueText {
    static func object(_ members: [String: String]) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: members, options: [.sortedKeys]), as: UTF8.self)
    }
}
