import Foundation
import Glibc
import TestSupport
import Testing

/// `rcagent mark-stale` beside a daemon that does not answer: the flag it writes itself still
/// reaches the daemon's watchers.
@Suite struct MarkStaleTests {
    /// Regression (failed until the fix): `rcagent mark-stale` writes the flag
    /// into the database itself when the daemon does not answer in time. The agent used to read
    /// the event log by id, so watchers (and the stale-set hooks) heard of that flag with the
    /// daemon's next write; since the writer only hands out its own committed events
    /// (StateStore.takeCommittedEvents), they hear "stale-cleared" for a "stale-set" they never saw.
    @Test func aStaleFlagWrittenBesideABusyDaemonStillReachesWatchers() throws {
        let sandbox = try Sandbox()
        let daemon = try sandbox.startServing(version: 1)
        let watcher = try SocketClient(path: sandbox.socketPath)
        #expect(watcher.watch())
        // A daemon that does not answer (stopped, as a wedged one would be): mark-stale writes itself.
        kill(daemon.process.processIdentifier, SIGSTOP)
        let mark = try sandbox.cli("mark-stale", "--reason", "beside the daemon")
        kill(daemon.process.processIdentifier, SIGCONT)
        #expect(mark.stdout.contains("in the database; the daemon did not take the request"), "\(mark.stdout)")

        try sandbox.publish(Sandbox.document(version: 2))
        #expect(try sandbox.cli("fetch", "--wait").status == 0)
        var kinds: [String] = []
        while let event = watcher.event(timeout: 10, where: { _ in true }) {
            kinds.append(event["event"] as? String ?? "?")
            if kinds.last == "stale-cleared" { break }
        }
        #expect(kinds.last == "stale-cleared", "\(kinds)\n\(daemon.log)")
        #expect(kinds.contains("stale-set"), "watchers saw the flag cleared but never set: \(kinds)")
        #expect(daemon.stop() == 0)
    }
}
