import Glibc
import RCCore
import RCService
import RCSystem
import Synchronization
import TestSupport
import Testing

@testable import RCAgent

/// The agent as the metrics file sees it: metrics whose template version the test changes, and the
/// observers it tells.
actor FakeMetricsSubject: MetricsSubject {
    private var templateVersion = "1"
    private var readers: [Int: @Sendable (StatusSnapshot) -> Void] = [:]
    /// Every observer registration (the writer listens), then every metrics read, in order.
    nonisolated let calls = Inbox<String>()

    func snapshot() -> StatusSnapshot {
        StatusSnapshot(
            store: nil, fetching: false, push: nil, report: nil,
            device: DeviceReport(
                deviceId: "dev", online: true, at: .now(), agentVersion: "test", templateVersion: templateVersion,
                stale: .init(set: false, since: nil), lastFetch: .init(status: nil, at: nil, error: nil),
                appInstalled: nil, update: .unknown, activities: 0))
    }

    func deviceMetrics(_ status: StatusSnapshot) -> DeviceMetrics {
        calls.send("read")
        return DeviceMetrics(
            report: status.device, lastFetchSuccess: nil, activationPending: false, activities: [:],
            pushConnected: nil, counters: .init(), startTime: Timestamp(milliseconds: 1_000))
    }

    func subscribeStatus(_ reader: @escaping @Sendable (StatusSnapshot) -> Void) -> Int {
        readers[1] = reader
        calls.send("observe")
        reader(snapshot())
        return 1
    }

    func unsubscribeStatus(_ id: Int) {
        readers[id] = nil
        calls.send("stop")
    }

    func change(templateVersion version: String) {
        templateVersion = version
        for reader in readers.values { reader(snapshot()) }
    }
}

/// ``MetricsWriter`` against a fake agent and real files: written whole, only when the text
/// changes, a failure logged once and the daemon's loop carrying on.
@Suite(.timeLimit(.minutes(10))) struct MetricsWriterTests {
    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        var logger: Logger { Logger(sink: { [self] line in lines.withLock { $0.append(line) } }) }
        var all: [String] { lines.withLock { $0 } }
    }

    static func text(_ path: String) -> String {
        (try? FileBytes.read(path)).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    static func inode(_ path: String) -> ino_t? {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_ino : nil
    }

    @Test func writesOnlyWhenTheTextChanges() async throws {
        try await TemporaryDirectory.with { directory in
            let path = directory.file("rcagent.prom")
            let subject = FakeMetricsSubject()
            let writer = MetricsWriter(path: path, subject: subject, log: Logger { _ in })
            await writer.writeIfChanged(subject.snapshot())
            let first = try #require(Self.inode(path))
            #expect(
                Self.text(path).contains(
                    "rcagent_template_version 1\n"))
            await writer.writeIfChanged(subject.snapshot())
            #expect(Self.inode(path) == first)  // the same file: not written again
            await subject.change(templateVersion: "2")
            await writer.writeIfChanged(subject.snapshot())
            #expect(Self.inode(path) != first)
            #expect(
                Self.text(path).contains(
                    "rcagent_template_version 2\n"))
            #expect(FileBytes.directoryEntries(directory.path) == ["rcagent.prom"])
        }
    }

    @Test func aFailureIsLoggedOnceAndTheNextWriteSaysItWorksAgain() async throws {
        try await TemporaryDirectory.with { directory in
            let path = directory.file("later/rcagent.prom")
            let lines = Lines()
            let subject = FakeMetricsSubject()
            let writer = MetricsWriter(path: path, subject: subject, log: lines.logger)
            await writer.writeIfChanged(subject.snapshot())
            await subject.change(templateVersion: "2")
            await writer.writeIfChanged(subject.snapshot())
            await writer.writeIfChanged(subject.snapshot())
            #expect(lines.all.count == 1, "\(lines.all)")
            #expect(
                lines.all.first?.hasPrefix("<4>Failed to write the metrics to \(path): open ") == true, "\(lines.all)")
            #expect(mkdir(directory.file("later"), 0o755) == 0)
            await writer.writeIfChanged(subject.snapshot())
            #expect(lines.all.last == "<6>Writing the metrics to \(path) again\n", "\(lines.all)")
            #expect(Self.inode(path) != nil)
        }
    }

    /// A burst of changes is a few writes, not one per change, and the last one has the final state.
    @Test func aBurstOfChangesIsTakenTogether() async throws {
        try await TemporaryDirectory.with { directory in
            let path = directory.file("rcagent.prom")
            let subject = FakeMetricsSubject()
            let writer = MetricsWriter(path: path, subject: subject, log: Logger { _ in })
            let task = Task { await writer.run() }
            #expect(await subject.calls.next() == "observe")
            #expect(await subject.calls.next() == "read")
            for version in 2...200 { await subject.change(templateVersion: String(version)) }
            #expect(await eventually(.seconds(120)) { Self.text(path).contains("rcagent_template_version 200\n") })
            // One more change, written only once every word of the burst was taken (they queue in order).
            await subject.change(templateVersion: "201")
            #expect(await eventually(.seconds(120)) { Self.text(path).contains("rcagent_template_version 201\n") })
            task.cancel()
            await task.value
            var reads = 0
            while let call = await subject.calls.next(until: .now) { reads += call == "read" ? 1 : 0 }
            // 200 changes within a second or two: one read per interval, not one per change.
            #expect(reads <= 10, "\(reads) reads")
        }
    }

    @Test func aRetiredWriterRemovesTheFileAndWritesNoMore() async throws {
        try await TemporaryDirectory.with { directory in
            let path = directory.file("rcagent.prom")
            let subject = FakeMetricsSubject()
            let writer = MetricsWriter(path: path, subject: subject, log: Logger { _ in })
            await writer.writeIfChanged(subject.snapshot())
            #expect(Self.inode(path) != nil)
            await writer.retire()
            #expect(Self.inode(path) == nil)
            await subject.change(templateVersion: "2")
            await writer.writeIfChanged(subject.snapshot())
            #expect(Self.inode(path) == nil)
        }
    }

    @Test func theLoopWritesAtStartAndOnEveryChangeUntilCancelled() async throws {
        try await TemporaryDirectory.with { directory in
            let path = directory.file("rcagent.prom")
            let subject = FakeMetricsSubject()
            let writer = MetricsWriter(path: path, subject: subject, log: Logger { _ in })
            let task = Task { await writer.run() }
            #expect(await subject.calls.next() == "observe")
            #expect(await subject.calls.next() == "read")
            await subject.change(templateVersion: "3")
            #expect(await subject.calls.next() == "read")
            #expect(await eventually(.seconds(120)) { Self.text(path).contains("rcagent_template_version 3\n") })
            task.cancel()
            await task.value
            var rest: [String] = []
            while let call = await subject.calls.next(until: .now) { rest.append(call) }
            #expect(rest.last == "stop", "\(rest)")
        }
    }
}
