import Foundation
import Glibc
import Testing

/// The CLI's one-line answers say what happened, not a misleading fragment (issue 16): no source
/// is "none", a fetch request says what may still skip it, an activation that changed nothing says so.
@Suite struct CLIMessagesTests {
    @Test func statusSaysThereIsNoSourceWhenNoneIsConfigured() throws {
        let sandbox = try Sandbox(extraConfig: "[Source]\nPath=")  // empty: back to the built-in (none)
        let status = try sandbox.cli("status")
        #expect(status.status == 0)
        #expect(
            status.stdout.contains(
                "\nsource:       none (set [Source] Type= and Path= or URL= in \(sandbox.configPath))\n"),
            "\(status.stdout)")

        try sandbox.writeConfig()
        #expect(try sandbox.cli("status").stdout.contains("\nsource:       file\n"))
    }

    @Test func fetchWithoutWaitSaysWhatMayStillSkipIt() throws {
        let sandbox = try Sandbox()
        let daemon = try sandbox.startServing(version: 1)
        let plain = try sandbox.cli("fetch")
        #expect(plain.status == 0)
        #expect(
            plain.stdout
                == "fetch requested; the daemon skips it if MinimumFetchInterval has not passed (--force) or the server throttles this device (--ignore-throttle); --wait waits and prints the outcome\n"
        )
        let forced = try sandbox.cli("fetch", "--force", "--ignore-throttle")
        #expect(forced.stdout == "fetch requested; --wait waits and prints the outcome\n")
        #expect(daemon.stop() == 0)
    }

    @Test func anActivationThatChangedNothingSaysSo() throws {
        // An http source: a file source's inotify watch would fetch the new template first.
        let sandbox = try Sandbox()
        let server = try ConfigServer(in: sandbox)
        try sandbox.writeConfig(extra: "[Source]\nType=http\nURL=\(server.url)")
        try server.serve(Sandbox.document(version: 1))
        let daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--wait").status == 0)
        // A new template version with the same values: fetched and activated, no key changed.
        try server.serve(
            Sandbox.document(version: 1).replacingOccurrences(
                of: #""templateVersion":"1""#, with: #""templateVersion":"2""#))
        let fetch = try sandbox.cli("fetch", "--force", "--wait")
        #expect(fetch.status == 0)
        #expect(fetch.stdout == "fetched and activated template 2; no keys changed\n", "\(fetch.stdout)\(daemon.log)")
        #expect(daemon.stop() == 0)
    }
}
