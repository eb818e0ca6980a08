import Foundation
import Glibc
import TestSupport
import Testing

/// The README's quick tour, run as written: its `sh` blocks, line by line, in a directory laid out
/// like a checkout after `make run` (the example config made by `make run-config`, the built
/// binaries at `.build/release`), against a running daemon. A tour that fails for a new user
/// (`command not found`, a line that errors) fails here first.
@Suite struct TourTests {
    static let checkout = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The `sh` code blocks of the README section `title`, each as its lines.
    static func blocks(in title: String) throws -> [[String]] {
        let readme = try String(contentsOf: checkout.appendingPathComponent("README.md"), encoding: .utf8)
        var blocks: [[String]] = []
        var inSection = false
        var block: [String]?
        for line in readme.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("## ") { inSection = line == "## " + title }
            guard inSection else { continue }
            if line == "```sh" {
                block = []
            } else if line == "```", let done = block {
                blocks.append(done)
                block = nil
            } else {
                block?.append(line)
            }
        }
        return blocks
    }

    @Test func theQuickTourRunsAsWritten() throws {
        let blocks = try Self.blocks(in: "A quick tour")
        try #require(blocks.count == 2, "the tour and its HTTP part")
        let sandbox = try Sandbox()  // only for its directory, removed at the end
        let root = sandbox.root.path
        let make = try runProcess(
            "/usr/bin/make", ["-s", "-C", Self.checkout.path, "run-config", "RUN_DIR=\(root)/run"])
        try #require(make.status == 0, "\(make.stdout)\(make.stderr)")
        try FileManager.default.createDirectory(atPath: root + "/.build", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            atPath: root + "/.build/release", withDestinationPath: Binaries.directory.path)
        let daemon = try DaemonProcess(sandbox, arguments: ["--config", root + "/run/agent.conf"])
        try daemon.waitUntilReady()

        // The first line sets PATH and RCAGENT_CONFIG; every later line runs in a shell that has
        // them, from the checkout, as a reader's shell would.
        let tour = blocks[0]
        try #require(tour.first?.hasPrefix("export PATH=$PWD/.build/release:$PATH") == true, "\(tour)")
        let prologue = tour[0]
        for line in tour.dropFirst() where !line.isEmpty {
            if line.hasPrefix("rcagent watch") {
                try expectWatchShowsAnEdit(prologue: prologue, line: line, root: root, daemon: daemon)
                continue
            }
            let result = try shell(prologue + "\n" + line, in: root)
            #expect(result.status == 0, "`\(line)` exited \(result.status): \(result.stdout)\(result.stderr)")
            #expect(!result.stderr.contains("not found"), "`\(line)`: \(result.stderr)")
            if line.hasPrefix("rcagent check-update; echo $?") { #expect(result.stdout.hasSuffix("100\n")) }
            if line.hasPrefix("rcagent get missing_key; echo $?") { #expect(result.stdout == "1\n") }
        }

        // The HTTP part: one shell fed the block line by line, as a reader types it, who starts the
        // web server and sees it listening before going on (a script would race its startup).
        let server = "python3 -m http.server 8321"
        try #require(blocks[1].first?.hasPrefix(server) == true, "\(blocks[1])")
        try #require(!Mosquitto.accepts(port: 8321), "something else listens on the tour's port 8321")
        let shell = try Subprocess("/bin/sh", ["-s"], environment: environment, in: root, input: true)
        shell.write(prologue + "\n" + blocks[1][0] + "\n")
        #expect(eventually { Mosquitto.accepts(port: 8321) }, "the tour's web server does not listen")
        shell.write(blocks[1].dropFirst().joined(separator: "\n") + "\n")
        shell.closeInput()
        let http = shell.finish()
        #expect(http.status == 0, "\(http.stdout)\(http.stderr)\n\(daemon.log)")
        #expect(http.stdout.contains("reloaded: Source.Type, Source.URL changed"), "\(http.stdout)")
        #expect(http.stdout.contains("source:       http\n"), "\(http.stdout)")
        // The reload fetched from the new source, so the `fetch --wait` after it has nothing to do.
        #expect(http.stdout.contains("not fetched: the last fetch is recent"), "\(http.stdout)")
        #expect(daemon.log.contains("from http http://127.0.0.1:8321/remote.json"), "\(daemon.log)")
        #expect(daemon.stop() == 0)
    }

    /// `rcagent watch` streams until interrupted: it must show the activation an edit of
    /// run/remote.json causes (what its comment promises), then it is stopped.
    private func expectWatchShowsAnEdit(prologue: String, line: String, root: String, daemon: DaemonProcess) throws {
        let output = root + "/watch.out"
        let watch = Process()
        watch.executableURL = URL(fileURLWithPath: "/bin/sh")
        watch.arguments = [
            "-c", prologue + "\nexec " + line.split(separator: "#")[0].trimmingCharacters(in: .whitespaces),
        ]
        watch.currentDirectoryURL = URL(fileURLWithPath: root)
        try #require(FileManager.default.createFile(atPath: output, contents: nil))
        watch.standardOutput = FileHandle(forWritingAtPath: output)
        try watch.run()
        defer {
            kill(watch.processIdentifier, SIGKILL)  // the test runner blocks SIGINT, and its children inherit that
            watch.waitUntilExit()
        }
        // Each edit (a space more) is a new document for the file source and an `activated` event;
        // edits go on, one every half second, until the watch shows one: the first may come before
        // the watch has subscribed.
        let remote = root + "/run/remote.json"
        let original = try String(contentsOfFile: remote, encoding: .utf8)
        var polls = 0
        #expect(
            eventually {
                if ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").contains("activated") { return true }
                if polls % 25 == 0 {
                    try? (original + String(repeating: " ", count: polls / 25 + 1)).write(
                        toFile: remote, atomically: true, encoding: .utf8)
                }
                polls += 1
                return false
            }, "\(daemon.log)")
    }

    /// The test runner's environment without RCAGENT_CONFIG, which the tour sets itself.
    private var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "RCAGENT_CONFIG")
        return environment
    }

    private func shell(_ script: String, in directory: String) throws -> ProcessResult {
        try runProcess("/bin/sh", ["-c", script], environment: environment, in: directory)
    }
}
