import Glibc
import RCCore
import RCService
import TestSupport
import Testing

@testable import RCAgent

/// `HookRunner` across a reload: the directory is listed again for every event, so a new hook file
/// runs from the next event on, and a reloaded `HooksDirectory=` is the only one that runs.
@Suite struct HookRunnerTests {
    /// An executable hook at `path` that appends `word` to `record`.
    private func hook(_ directory: TemporaryDirectory, _ name: String, appending word: String, to record: String)
        throws
    {
        let path = try directory.write(name, "#!/bin/sh\necho \(word) >> \(record)\n")
        #expect(chmod(path, 0o755) == 0)
    }

    @Test(.timeLimit(.minutes(10)))
    func newHookFilesAndAReloadedDirectoryTakeEffectWithTheNextEvent() async throws {
        // These hooks exit without reading the event on their standard input: the runner's write then
        // fails with EPIPE, as in the daemon, which ignores SIGPIPE from its start (Lifecycle). Run alone,
        // this process would otherwise die of the signal.
        signal(SIGPIPE, SIG_IGN)
        try await TemporaryDirectory.with { directory in
            let record = directory.file("record")
            func lines() -> [String] {
                ((try? directory.read("record")) ?? []).split(separator: 10).map { String(decoding: $0, as: UTF8.self) }
            }
            try hook(directory, "first/10-a", appending: "a", to: record)
            let runner = HookRunner(
                directory: directory.file("first"), timeout: .seconds(30), log: Logger(sink: { _ in }))
            runner.enqueue(HookEvent(kind: .activated, templateVersion: "1"))
            #expect(await eventually(.seconds(30)) { lines() == ["a"] }, "\(lines())")

            // A hook added beside it runs from the next event on.
            try hook(directory, "first/20-b", appending: "b", to: record)
            runner.enqueue(HookEvent(kind: .activated, templateVersion: "2"))
            #expect(await eventually(.seconds(30)) { lines() == ["a", "a", "b"] }, "\(lines())")

            // A reload to another directory: only that directory's hooks run.
            try hook(directory, "second/10-c", appending: "c", to: record)
            runner.configure(directory: directory.file("second"), timeout: .seconds(30))
            #expect(runner.hooks == ["10-c"])
            runner.enqueue(HookEvent(kind: .activated, templateVersion: "3"))
            #expect(await eventually(.seconds(30)) { lines() == ["a", "a", "b", "c"] }, "\(lines())")
        }
    }
}
