import Foundation
import TestSupport
import Testing

/// The man pages made from docs/ (packaging/manpage.sh) as a reader sees them in an 80-column
/// terminal: tables become definition lists, long code lines are broken, and
/// packaging/manpage-check.sh (also run by `make deb-check`) finds no troff warning and no line
/// over 80 columns. Needs go-md2man and man-db (the Makefile's TEST_DEPS).
@Suite struct ManPageTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let check = root.appendingPathComponent("packaging/manpage-check.sh").path
    static let manpage = root.appendingPathComponent("packaging/manpage.sh").path
    static let environment = ["PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "LC_ALL": "C.UTF-8", "MANWIDTH": "80"]

    /// The page `doc` as `man` shows it at 80 columns.
    static func render(_ doc: String) throws -> ProcessResult {
        try runProcess(
            "/bin/sh", ["-c", #"sh "$0" "$1" 0 | man -l -"#, manpage, doc], environment: environment)
    }

    static let header = "# demo(1)\n\n## NAME\n\ndemo — a page for the tests\n\n"

    @Test func everyPageOfTheManualReadsAt80Columns() throws {
        let result = try runProcess("/bin/sh", [Self.check], environment: Self.environment)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        for page in ["rcagent", "rcagentd", "agent.conf", "rcadmin"] {
            #expect(result.stdout.contains("\(page): 0 troff warnings"), "\(result.stdout)")
        }
    }

    @Test func aTableBecomesADefinitionListWithItsHeadersAsLabels() throws {
        try TemporaryDirectory.with { directory in
            let meaning = Array(repeating: "a meaning long enough to need more than one line", count: 3)
                .joined(separator: ", ")
            let doc = try directory.write(
                "demo.md",
                Self.header + "## KEYS\n\n| key | type | default | meaning |\n|---|---|---|---|\n"
                    + "| `Socket=` | path | `/run/x.sock` | \(meaning) |\n| `Pipe=` | text \\| none | | short |\n"
                    + "```\ncode right after the table\n```\n")
            let result = try Self.render(doc)
            #expect(result.status == 0 && result.stderr.isEmpty, "\(result.stderr)")
            let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let socket = try #require(lines.firstIndex(of: "       Socket="), "\(result.stdout)")
            #expect(lines[socket + 1] == "              Type: path")
            #expect(lines[socket + 2] == "              Default: /run/x.sock")
            #expect(lines[socket + 3].hasPrefix("              Meaning: a meaning long enough"))
            #expect(result.stdout.contains("Type: text | none"), "an escaped bar is a bar")
            #expect(!result.stdout.contains("Default: \n"), "an empty cell gives no line")
            #expect(result.stdout.contains("\n              code right after the table\n"), "\(result.stdout)")
            #expect(lines.allSatisfy { $0.count <= 80 })
        }
    }

    /// A broken shell line still runs as the one it was: its output is the same.
    @Test func aLongShellLineIsBrokenAndStillRunsTheSame() throws {
        try TemporaryDirectory.with { directory in
            let command =
                #"printf '%s|' "alpha beta" gamma delta 'epsilon zeta eta theta' iota kappa lambda mu nu xi"#
                + " https://example.com/a/very/long/path/that/no/line/of/the/page/can/hold/in/one/piece/1234567890"
            let doc = try directory.write("demo.md", Self.header + "## EXAMPLE\n\n```sh\n\(command)\n```\n")
            let result = try Self.render(doc)
            #expect(result.status == 0 && result.stderr.isEmpty, "\(result.stderr)")
            let code = result.stdout.split(separator: "\n").map(String.init)
                .filter { $0.hasPrefix(String(repeating: " ", count: 14)) }.map { String($0.dropFirst(14)) }
            #expect(code.count > 2, "\(result.stdout)")
            #expect(result.stdout.split(separator: "\n").allSatisfy { $0.count <= 80 }, "\(result.stdout)")
            let original = try runProcess("/bin/sh", ["-c", command], environment: Self.environment)
            let wrapped = try runProcess(
                "/bin/sh", ["-c", code.joined(separator: "\n")], environment: Self.environment)
            #expect(original.status == 0 && wrapped.status == 0, "\(wrapped.stderr)")
            #expect(wrapped.stdout == original.stdout, "\(code.joined(separator: "\n"))")
        }
    }

    /// A line that cannot be broken (one quoted word) is reported, naming the page and the line.
    @Test func theCheckFailsOnALineOver80Columns() throws {
        try TemporaryDirectory.with { directory in
            let word = String(repeating: "x", count: 90)
            let doc = try directory.write("demo.md", Self.header + "## EXAMPLE\n\n```sh\necho '\(word)'\n```\n")
            let result = try runProcess("/bin/sh", [Self.check, doc], environment: Self.environment)
            #expect(result.status == 1)
            #expect(result.stderr.contains("manpage-check: demo: lines over 80 columns"), "\(result.stderr)")
            #expect(result.stderr.contains(word), "\(result.stderr)")
        }
    }
}
