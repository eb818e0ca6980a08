import Foundation
import Glibc
import TestSupport
import Testing

/// A change the daemon answers for is on the disk first. It commits without waiting for the disk
/// and syncs the state database's log itself, on another thread while it builds the reader file;
/// the answer waits for both. Seen from outside with strace attached to the running daemon: each
/// change is a sync of `state.db-wal`, and a sync that fails is the fetch's error, not its success.
@Suite(.enabled(if: getuid() == 0, "needs root: strace attaches to a process it did not start"))
struct LogSyncTests {
    @Test func everyAnsweredChangeIsSyncedAndAFailedSyncFailsTheFetch() throws {
        let sandbox = try Sandbox()
        let daemon = try sandbox.startServing(version: 1)
        let log = sandbox.databasePath + "-wal"

        var trace = try Strace(attachingTo: daemon.process.processIdentifier, syncsOf: log, failing: false, in: sandbox)
        for version in 2...4 {
            try sandbox.publish(Sandbox.document(version: version))
            #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        }
        let synced = trace.stop()
        #expect(synced >= 3, "three changes answered, \(synced) syncs of the log")

        // Every sync of the log fails (EIO): the fetch says so, naming the file.
        trace = try Strace(attachingTo: daemon.process.processIdentifier, syncsOf: log, failing: true, in: sandbox)
        try sandbox.publish(Sandbox.document(version: 5))
        let failed = try sandbox.cli("fetch", "--force", "--wait")
        let failedSyncs = trace.stop()
        #expect(failedSyncs >= 1)
        #expect(failed.status != 0, "a fetch whose change may not be on the disk is not a success: \(failed.stdout)")
        #expect(failed.stderr.contains("cannot sync \(log) to the disk"), "\(failed.stderr)")
        // Committed all the same (SQLite made it visible before the sync): what readers see is the
        // database's, which a power cut may take back to version 4.
        #expect(try sandbox.cli("get", "key_0").stdout == "v5\n")

        // The daemon goes on: the next change is synced and answered.
        try sandbox.publish(Sandbox.document(version: 6))
        let next = try sandbox.cli("fetch", "--force", "--wait")
        #expect(next.status == 0, "\(next.stderr)\n\(daemon.log)")
        #expect(try sandbox.cli("get", "key_0").stdout == "v6\n")
        #expect(daemon.stop() == 0)
    }
}

/// strace attached to every thread of a running process, tracing (or failing, EIO) its
/// `fdatasync` calls on one file.
private struct Strace {
    let strace: Subprocess
    let output: String

    init(attachingTo pid: pid_t, syncsOf path: String, failing: Bool, in sandbox: Sandbox) throws {
        output = sandbox.root.appendingPathComponent("strace-\(UUID().uuidString)").path
        strace = try Subprocess(
            "/usr/bin/strace",
            ["-f", "-p", "\(pid)", "-o", output, "-e", "trace=fdatasync", "-P", path]
                + (failing ? ["-e", "inject=fdatasync:error=EIO"] : []))
        // Attached when every thread of the process names strace as its tracer.
        let attached = eventually(30) {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
            return !tasks.isEmpty
                && tasks.allSatisfy { task in
                    let status =
                        (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)) ?? ""
                    return status.contains("TracerPid:\t\(strace.pid)\n")
                }
        }
        if !attached {
            throw DaemonError("strace did not attach to \(pid): \(strace.finish(bound: .seconds(5)).stderr)")
        }
    }

    /// Detaches; the number of traced calls.
    func stop() -> Int {
        kill(strace.pid, SIGINT)
        _ = strace.finish(bound: .seconds(30))
        let trace = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        return trace.split(separator: "\n").filter { $0.contains("fdatasync(") }.count
    }
}
