import Foundation
import Glibc
import RCCore
import RCSystem
import TestSupport
import Testing

/// `rcagent hold` with real processes: the lock is held shared while the command runs and let go
/// when it exits, the daemon's probe (exclusive, non-blocking) sees it, `hold --list` names the
/// holder and its reason, the exit status and signals are the command's, and a hold that cannot be
/// taken still runs the command.
///
/// Time-limited so that a hang fails rather than blocks CI; the limit is long because under the whole
/// suite the synchronous end-to-end tests can hold every cooperative-pool thread for minutes, and a
/// test's clock runs while it waits for one (one of these passed in 8 s alone and ran past 2 minutes there).
@Suite(.timeLimit(.minutes(10))) struct HoldCommandTests {
    /// `rcagent hold --config <sandbox's> ARGS...`: the config before `--`, where it is an option.
    private func hold(_ sandbox: Sandbox, _ arguments: String...) throws -> ProcessResult {
        try sandbox.run("rcagent", ["hold", "--config", sandbox.configPath] + arguments)
    }

    @Test
    func aHoldIsSeenWhileItsCommandRunsAndEndsWithIt() throws {
        let sandbox = try Sandbox()
        let hold = try sandbox.startHold(reason: "payment 42", command: "cat >/dev/null; exit 7")
        let lock = try HoldLock(path: HoldLock.path(stateDirectory: sandbox.statePath))
        #expect(try lock.isHeld())
        let holders = lock.holders()
        #expect(holders.map(\.pid) == [hold.pid])
        #expect(holders.first?.reason == "payment 42")
        let started = try #require(holders.first?.since)
        #expect(abs((Timestamp.now() - started).milliseconds) < 60_000)

        let listed = try sandbox.cli("hold", "--list", "--json")
        #expect(listed.status == 0, "\(listed.stderr)")
        let items = try #require(
            try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]], "\(listed.stdout)")
        #expect(items.count == 1)
        #expect(items.first?["pid"] as? Int == Int(hold.pid))
        #expect(items.first?["reason"] as? String == "payment 42")
        let text = try sandbox.cli("hold", "--list")
        #expect(
            text.stdout.contains("pid \(hold.pid) held for") && text.stdout.contains(": payment 42"), "\(text.stdout)")

        // The command ends: its status is the hold's, and the lock is free.
        hold.closeInput()
        let result = hold.finish()
        #expect(result.status == 7, "\(result.stderr)")
        #expect(try !lock.isHeld())
        #expect(lock.holders().isEmpty)
        #expect(try sandbox.cli("hold", "--list").stdout == "no holds\n")
    }

    @Test
    func aSignalToTheHoldReachesTheCommand() throws {
        let sandbox = try Sandbox()
        let hold = try sandbox.startHold(reason: "call", command: "exec sleep 600")
        let lock = try HoldLock(path: HoldLock.path(stateDirectory: sandbox.statePath))
        #expect(eventually(60) { (try? lock.isHeld()) == true })
        kill(hold.pid, SIGTERM)
        let result = hold.finish(bound: .seconds(60))
        // sleep died of the forwarded SIGTERM, and the hold says so as a shell would.
        #expect(result.status == 128 + SIGTERM, "\(result.stderr)")
        #expect(try !lock.isHeld())
    }

    @Test func theExitStatusIsTheCommands() throws {
        let sandbox = try Sandbox()
        try FileManager.default.createDirectory(atPath: sandbox.statePath, withIntermediateDirectories: true)
        let plain = try hold(sandbox, "--", "sh", "-c", "exit 0")
        #expect(plain.status == 0)
        #expect(plain.stderr == "", "\(plain.stderr)")
        #expect(try hold(sandbox, "--", "sh", "-c", "exit 3").status == 3)
        #expect(try hold(sandbox, "--", "sh", "-c", "echo out; echo err >&2").stdout == "out\n")
        let missing = try hold(sandbox, "--", "/nonexistent/command")
        #expect(missing.status == 127)
        #expect(missing.stderr.contains("cannot run /nonexistent/command"))
    }

    @Test func aHoldWithoutACommandIsAUsageError() throws {
        let sandbox = try Sandbox()
        let result = try sandbox.cli("hold")
        #expect(result.status == 64)
        #expect(result.stderr.contains("missing COMMAND"))
    }

    @Test func aHoldThatCannotBeTakenStillRunsTheCommand() throws {
        let sandbox = try Sandbox()
        // No state directory: there is no lock file to take.
        let result = try hold(sandbox, "--", "sh", "-c", "echo ran; exit 5")
        #expect(result.status == 5)
        #expect(result.stdout == "ran\n")
        #expect(result.stderr.contains("Warning: cannot hold off activations"), "\(result.stderr)")
    }

    @Test func aHoldWithABadConfigStillRunsTheCommand() throws {
        let sandbox = try Sandbox(extraConfig: "[Activation]\nHistory=many\n")
        let result = try hold(sandbox, "--", "sh", "-c", "echo ran")
        #expect(result.status == 0)
        #expect(result.stdout == "ran\n")
        #expect(result.stderr.contains("History= must be a number"), "\(result.stderr)")
    }
}
