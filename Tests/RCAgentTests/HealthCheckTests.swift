import Glibc
import RCCore
import RCService
import RCSystem
import Synchronization
import TestSupport
import Testing

@testable import RCAgent

/// `HealthCheck=` run for real: its verdict (exit 0, another status, a signal, no verdict in time,
/// not runnable), the environment it sees, its output logged and kept bounded, and a timeout that
/// kills what it started too.
@Suite struct HealthCheckTests {
    private final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        var logger: Logger { Logger(sink: { [self] line in lines.withLock { $0.append(line) } }) }
        var all: [String] { lines.withLock { $0 } }
    }

    private func script(_ directory: TemporaryDirectory, _ body: String) throws -> String {
        let path = try directory.write("check", "#!/bin/sh\n" + body + "\n")
        #expect(chmod(path, 0o755) == 0)
        return path
    }

    @Test func exitZeroPassesAndTheCheckSeesTheVersions() throws {
        try TemporaryDirectory.with { directory in
            let log = Lines()
            let path = try script(
                directory, "echo \"$RCAGENT_EVENT $RCAGENT_TEMPLATE_VERSION after $RCAGENT_PREVIOUS_TEMPLATE_VERSION\"")
            let result = HealthCheck(path: path, timeout: .seconds(30)).run(
                templateVersion: "8", previousVersion: "7", log: log.logger)
            #expect(result.verdict == .passed)
            #expect(result.output == "health-check 8 after 7\n")
            #expect(log.all.contains { $0.contains("health check: health-check 8 after 7") })
        }
    }

    @Test func anotherExitStatusFailsWithIt() throws {
        try TemporaryDirectory.with { directory in
            let log = Lines()
            let path = try script(directory, "echo page did not load >&2\nexit 3")
            let result = HealthCheck(path: path, timeout: .seconds(30)).run(
                templateVersion: "8", previousVersion: "7", log: log.logger)
            #expect(result.verdict == .failed(exitCode: 3))
            #expect(result.output == "page did not load\n")
            #expect(log.all.contains { $0.contains("Health check \(path) exited with status 3") })
        }
    }

    @Test func aCheckKilledByASignalFailsAs128PlusTheSignal() throws {
        try TemporaryDirectory.with { directory in
            let path = try script(directory, "kill -TERM $$")
            let result = HealthCheck(path: path, timeout: .seconds(30)).run(
                templateVersion: nil, previousVersion: nil, log: Lines().logger)
            #expect(result.verdict == .failed(exitCode: 128 + SIGTERM))
        }
    }

    @Test(.timeLimit(.minutes(10)))
    func aHangingCheckTimesOutAndWhatItStartedIsKilledWithIt() async throws {
        try await TemporaryDirectory.with { directory in
            let pidFile = directory.file("child.pid")
            let path = try script(directory, "sleep 600 &\necho $! > \(pidFile)\nwait")
            let result = HealthCheck(path: path, timeout: .seconds(1)).run(
                templateVersion: "8", previousVersion: "7", log: Lines().logger)
            #expect(result.verdict == .timedOut)
            let text = String(decoding: try directory.read("child.pid"), as: UTF8.self)
            let child = try #require(Int32(text.split(separator: "\n").first ?? ""))
            // Killed with the check's process group: gone, or a zombie waiting for its new parent.
            #expect(
                await eventually(.seconds(30)) {
                    guard let stat = try? directory.readAbsolute("/proc/\(child)/stat") else { return true }
                    let fields = String(decoding: stat, as: UTF8.self).split(separator: ")").last ?? ""
                    return fields.split(separator: " ").first == "Z"
                })
        }
    }

    @Test func aCheckThatCannotRunFails() throws {
        try TemporaryDirectory.with { directory in
            let missing = HealthCheck(path: directory.file("missing"), timeout: .seconds(5)).run(
                templateVersion: nil, previousVersion: nil, log: Lines().logger)
            #expect(missing.verdict == .failed(exitCode: 127))
            let notExecutable = try directory.write("plain", "#!/bin/sh\nexit 0\n")
            let refused = HealthCheck(path: notExecutable, timeout: .seconds(5)).run(
                templateVersion: nil, previousVersion: nil, log: Lines().logger)
            #expect(refused.verdict == .failed(exitCode: 126))
        }
    }

    @Test func theOutputKeptIsBoundedAndAllOfItIsLogged() throws {
        try TemporaryDirectory.with { directory in
            let log = Lines()
            let path = try script(directory, "i=0; while [ $i -lt 2000 ]; do echo line-$i; i=$((i+1)); done; exit 1")
            let result = HealthCheck(path: path, timeout: .seconds(30)).run(
                templateVersion: nil, previousVersion: nil, log: log.logger)
            #expect(result.verdict == .failed(exitCode: 1))
            #expect(result.output.utf8.count <= SupervisedProcess.keptOutput + 1)
            #expect(result.output.hasPrefix("line-0\nline-1\n"))
            #expect(log.all.contains { $0.contains("health check: line-1999") })
        }
    }
}

extension TemporaryDirectory {
    fileprivate func readAbsolute(_ path: String) throws -> [UInt8] {
        guard let bytes = try FileBytes.read(path) else { throw SystemError("open \(path)", errno: ENOENT) }
        return bytes
    }
}
