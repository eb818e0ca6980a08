import Testing

@testable import RCAdmin

/// The one option parser every rcadmin command uses: what it accepts, and that each refusal is a
/// usage error naming the option.
@Suite struct OptionsTests {
    static let specs: [OptionSpec] = [
        .flag("json"), .value("version", "N"), .value("output", "FILE", short: "o"), .flag("force"),
    ]

    func parse(_ arguments: [String]) throws(AdminFailure) -> ParsedOptions {
        try ParsedOptions(arguments, options: Self.specs)
    }

    func refusal(_ arguments: [String]) -> AdminFailure? {
        do {
            _ = try parse(arguments)
            return nil
        } catch {
            return error
        }
    }

    @Test func optionsAnywhereInEitherSpelling() throws {
        let options = try parse(["a.json", "--version=3", "--json", "-o", "out.json", "b.json"])
        #expect(options.positionals == ["a.json", "b.json"])
        #expect(options.value("version") == "3" && options.value("output") == "out.json")
        #expect(options.flag("json") && !options.flag("force"))
        #expect(try options.integer("version") == 3)
        #expect(!options.help)
    }

    @Test func doubleDashEndsTheOptionsAndAValueMayLookLikeOne() throws {
        let options = try parse(["--output=--force", "--version", "-3", "--", "--json", "-"])
        #expect(options.value("output") == "--force", "a value starting with - is given with =")
        #expect(options.value("version") == "-3", "a value that is no option of the command is taken as it is")
        #expect(!options.flag("force") && !options.flag("json"))
        #expect(options.positionals == ["--json", "-"])
        #expect(try parse(["--help", "--json"]).help)
    }

    /// `template publish FILE --description --validate-only` once published for real, with the
    /// description "--validate-only": an option where a value belongs is a forgotten value.
    @Test(arguments: [
        ["--output", "--force"], ["--output", "-o"], ["--version", "--json=1"], ["-o", "--"],
        ["--version", "--help"],
    ])
    func anOptionWhereAValueBelongsIsAForgottenValue(_ arguments: [String]) {
        let failure = refusal(arguments)
        #expect(failure?.kind == .usage)
        #expect(failure?.message.contains("needs a value, got the option '\(arguments[1])'") == true)
    }

    @Test(arguments: [
        (["--bogus"], "unknown option '--bogus'"),
        (["-x"], "unknown option '-x'"),
        (["--json", "--json"], "option '--json' given twice"),
        (["--version", "1", "--version=2"], "option '--version' given twice"),
        (["--version"], "option '--version' needs a value"),
        (["--json=yes"], "option '--json' takes no value"),
        (["--bo\u{1b}[2Jgus"], "unknown option '--bo\\x1b[2Jgus'"),
    ])
    func refusalsAreUsageErrorsNamingTheOption(_ arguments: [String], _ message: String) {
        let failure = refusal(arguments)
        #expect(failure?.kind == .usage && failure?.exitCode == 64)
        #expect(failure?.message == message)
    }

    @Test func numbersAreWholeAndInRange() throws {
        #expect(try ParsedOptions.integer("0042", what: "N", in: 1...100) == 42)
        for text in ["", "-1", "1.5", "0", "101", "9999999999999999999999", "½"] {
            #expect(throws: AdminFailure.self) { try ParsedOptions.integer(text, what: "N", in: 1...100) }
        }
        let options = try parse(["--version", "x"])
        #expect(throws: AdminFailure.self) { try options.integer("version") }
        #expect(try parse([]).integer("version") == nil)
    }

    /// `rcadmin --version` prints the version; with anything after it, the command word was
    /// forgotten (`rcadmin --version 1.5.0 --platform linux ...`): a usage error, not exit 0.
    @Test func topLevelVersionTakesNoArguments() {
        #expect(AdminTool.main(arguments: ["--version"]) == 0)
        #expect(AdminTool.main(arguments: ["--version", "1.5.0", "--platform", "linux"]) == 64)
    }

    /// `--endpoint ""` (a test server's variable left empty) once meant Google itself, silently.
    @Test func anEmptyEndpointOptionIsAUsageErrorAndAnEmptyVariableIsUnset() throws {
        let specs = AdminCommand.googleOptions
        do {
            _ = try GoogleContext.endpoint(try ParsedOptions(["--endpoint="], options: specs), environment: [:])
            Issue.record("an empty --endpoint was taken")
        } catch {
            #expect(error.kind == .usage && error.message.contains("--endpoint"))
        }
        #expect(
            try GoogleContext.endpoint(try ParsedOptions([], options: specs), environment: ["RCADMIN_ENDPOINT": ""])
                == nil)
        #expect(
            try GoogleContext.endpoint(
                try ParsedOptions(["--endpoint", "http://127.0.0.1:9"], options: specs), environment: [:])
                == "http://127.0.0.1:9")
    }

    /// The relay's command line is parsed like every command's: `--config=FILE` is the same as
    /// `--config FILE` (it was an unknown option), a repeated one is refused (the last one won),
    /// and so is an option where the file name belongs.
    @Test func theRelayReadsItsOptionsLikeEveryCommand() {
        let missing = "/nonexistent/relay.conf"
        #expect(AdminTool.main(arguments: ["relay", "--config=\(missing)"]) == 1, "a config it cannot read: 1")
        #expect(AdminTool.main(arguments: ["relay", "--config", missing, "--config", missing]) == 64)
        #expect(AdminTool.main(arguments: ["relay", "--config", "--help"]) == 64)
        #expect(AdminTool.main(arguments: ["relay", "--config", missing, "stray"]) == 64)
        #expect(AdminTool.main(arguments: ["relay"]) == 64)
    }
}
