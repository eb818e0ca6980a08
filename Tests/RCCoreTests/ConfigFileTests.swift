import RCCore
import Testing

/// The INI syntax alone (`ConfigFile.parse`): sections, comments, keys, and every syntax error
/// with the file and line it names.
@Suite struct ConfigFileTests {
    /// One line per entry: `file:line [Section] Key=Value`.
    private func render(_ entries: [ConfigEntry]) -> [String] {
        entries.map { "\($0.location) [\($0.section)] \($0.key)=\($0.value)" }
    }

    @Test func parsesSectionsCommentsAndInlineComments() throws {
        let text = """
            # a comment line
            ; another comment line

            [Agent]
            StateDirectory = /var/lib/x   # trailing comment
            Socket=/run/x.sock ; semicolon comment
            SocketGroup=group#not-a-comment;nor-this
              Activation=manual\t
            Jitter=3s\t# tab before the comment
            [ App ]
            Version=1.2.3
            Dotted.Key-Name_2=a=b
            """
        let entries = try ConfigFile.parse(text, file: "/etc/rcagent/agent.conf")
        #expect(
            render(entries) == [
                "/etc/rcagent/agent.conf:5 [Agent] StateDirectory=/var/lib/x",
                "/etc/rcagent/agent.conf:6 [Agent] Socket=/run/x.sock",
                "/etc/rcagent/agent.conf:7 [Agent] SocketGroup=group#not-a-comment;nor-this",
                "/etc/rcagent/agent.conf:8 [Agent] Activation=manual",
                "/etc/rcagent/agent.conf:9 [Agent] Jitter=3s",
                "/etc/rcagent/agent.conf:11 [App] Version=1.2.3",
                "/etc/rcagent/agent.conf:12 [App] Dotted.Key-Name_2=a=b",
            ])
    }

    @Test func emptyValueAndCommentOnlyValueAreEmpty() throws {
        let entries = try ConfigFile.parse("[Agent]\nSocketGroup=\nFetchTimeout=   # reset\n", file: "f")
        #expect(entries.map(\.value) == ["", ""])
        #expect(entries.map(\.location.line) == [2, 3])
    }

    @Test func crlfLineEndingsAreAccepted() throws {
        let entries = try ConfigFile.parse("[Agent]\r\nSocket=/run/a.sock\r\n\r\n[Push]\r\nJitter=1s\r\n", file: "f")
        #expect(render(entries) == ["f:2 [Agent] Socket=/run/a.sock", "f:5 [Push] Jitter=1s"])
    }

    /// The scan goes by bytes: text outside ASCII passes through whole, a CR inside a value stays,
    /// and CRs at the ends of a line are trimmed like spaces.
    @Test func textOutsideASCIIAndStrayCarriageReturns() throws {
        let entries = try ConfigFile.parse(
            "[Ünïcode €]\r\r\nVersion= é€ # ☃\nURL=a\rb\r\n\r\n[Agent]\nSocket=/run/✓;x ;c\n", file: "f")
        #expect(
            render(entries) == [
                "f:2 [Ünïcode €] Version=é€", "f:3 [Ünïcode €] URL=a\rb", "f:6 [Agent] Socket=/run/✓;x",
            ])
    }

    /// A sign counts only where it is a character of its own, as when the scan went by `Character`:
    /// a keycap `#️⃣` starts no comment, `=` with U+0338 is `≠` and splits nothing, and a space that a
    /// combining mark follows is not trimmed.
    @Test func signsThatAreOnlyPartOfACharacterAreText() throws {
        let entries = try ConfigFile.parse(
            "[Signals]\nGreeting=Press #\u{FE0F}\u{20E3} now ; a comment\nMood= \u{301}x\n", file: "f")
        #expect(
            render(entries) == ["f:2 [Signals] Greeting=Press #\u{FE0F}\u{20E3} now", "f:3 [Signals] Mood= \u{301}x"])
        #expect(throws: ConfigError(SourceLocation(file: "f", line: 2), "invalid key 'A=\u{338}B'")) {
            try ConfigFile.parse("[Signals]\nA=\u{338}B=c\n", file: "f")
        }
        #expect(
            throws: ConfigError(SourceLocation(file: "f", line: 2), "expected Key=Value, got '#\u{FE0F}\u{20E3} 1'")
        ) {
            try ConfigFile.parse("[Signals]\n#\u{FE0F}\u{20E3} 1\n", file: "f")
        }
    }

    @Test func emptyFileHasNoEntries() throws {
        #expect(try ConfigFile.parse("", file: "f").isEmpty)
        #expect(try ConfigFile.parse("\n\n# only comments\n; here\n", file: "f").isEmpty)
        #expect(try ConfigFile.parse("[Agent]\n", file: "f").isEmpty)
    }

    struct SyntaxErrorCase: Sendable, CustomTestStringConvertible {
        let text: String
        let line: Int
        let message: String
        var testDescription: String { message }
    }

    @Test(arguments: [
        SyntaxErrorCase(
            text: "[Agent]\n[Push\n", line: 2, message: "malformed section header '[Push', expected [Name]"),
        SyntaxErrorCase(text: "# c\n\n[]\n", line: 3, message: "malformed section header '[]', expected [Name]"),
        SyntaxErrorCase(text: "[Agent]\n[  ]\n", line: 2, message: "malformed section header '[  ]', expected [Name]"),
        SyntaxErrorCase(
            text: "[Agent] # comment\n", line: 1,
            message: "malformed section header '[Agent] # comment', expected [Name]"),
        SyntaxErrorCase(text: "[Agent]\nSocket=/x\nJustText\n", line: 3, message: "expected Key=Value, got 'JustText'"),
        SyntaxErrorCase(text: "Agent]\n", line: 1, message: "expected Key=Value, got 'Agent]'"),
        SyntaxErrorCase(text: "[Agent]\nBad Key=1\n", line: 2, message: "invalid key 'Bad Key'"),
        SyntaxErrorCase(text: "[Agent]\n\n  =value\n", line: 3, message: "invalid key ''"),
        SyntaxErrorCase(text: "[Agent]\nKéy=1\n", line: 2, message: "invalid key 'Kéy'"),
        SyntaxErrorCase(text: "[Agent]\nKey!=1\n", line: 2, message: "invalid key 'Key!'"),
        SyntaxErrorCase(
            text: "# header comment\nSocket=/x\n[Agent]\n", line: 2,
            message: "'Socket=' appears before any [Section] header"),
    ])
    func syntaxErrorNamesFileAndLine(_ example: SyntaxErrorCase) {
        #expect(
            throws: ConfigError(SourceLocation(file: "/etc/rcagent/agent.conf", line: example.line), example.message)
        ) {
            try ConfigFile.parse(example.text, file: "/etc/rcagent/agent.conf")
        }
    }

    @Test func errorDescriptionIsFileColonLineColonMessage() {
        let error = ConfigError(SourceLocation(file: "/etc/rcagent/agent.conf", line: 7), "invalid key 'x y'")
        #expect(error.description == "/etc/rcagent/agent.conf:7: invalid key 'x y'")
        // Line 0 means "the file as a whole" and is not printed.
        #expect(
            ConfigError(SourceLocation(file: "/a.conf", line: 0), "config file not found").description
                == "/a.conf: config file not found")
    }
}
