import Foundation
import Glibc
import TestSupport
import Testing

/// How rcagentd stops: on time whatever is in flight, with its state intact.
@Suite struct StopTests {
    /// SIGTERM while a fetch waits for a server that took the connection and never answers, with
    /// FetchTimeout=60s: the stop gives up on the transfer at its deadline instead of waiting out
    /// the timeout, exits 0, and the cache still serves the last good template.
    @Test func sigtermDuringAStalledFetchEndsTheDaemonOnTime() throws {
        let sandbox = try Sandbox()
        let first = try sandbox.startServing(version: 1)
        #expect(first.stop() == 0, "\(first.log)")
        // A listening socket nobody accepts on: the kernel completes the connection, curl sends
        // its request, and nothing ever answers.
        let listener = try SilentListener()
        let port = listener.port
        try sandbox.writeConfig(
            extra: "[Source]\nType=http\nURL=http://127.0.0.1:\(port)/config\n[Agent]\nFetchTimeout=60s\n")
        let daemon = try sandbox.startDaemon()
        _ = try sandbox.cli("fetch", "--force")
        // The fetch has connected: its connection waits in the listener's queue.
        #expect(
            eventually { listener.hasWaitingConnection }, "\(daemon.log)")
        let signalled = ContinuousClock.now
        #expect(daemon.stop() == 0, "\(daemon.log)")
        // Against FetchTimeout's 60 s: the deadline is 5 s; the rest is room for a loaded machine.
        #expect(ContinuousClock.now - signalled < .seconds(30), "\(daemon.log)")
        #expect(daemon.log.contains("Stopping with the services still running after 5s"), "\(daemon.log)")
        #expect(daemon.log.contains("Stopped"), "\(daemon.log)")
        #expect(try sandbox.cli("get", "key_0").stdout == "v1\n")
    }
}
