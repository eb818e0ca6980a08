import Glibc
import RCCore
import RCService
import RCStore
import Synchronization
import TestSupport
import Testing

@testable import RCAgent

/// `EventBroadcaster`: what the store logged goes to every `watch` subscriber as lines, after its
/// acknowledgement, in the log's order even when another process wrote in between; a subscriber
/// that does not keep up is dropped without stalling the others; closing ends every stream; the
/// hooks hear of what they should. Subscribers are real socket pairs.
@Suite struct EventBroadcasterTests {
    /// A broadcaster over a fresh database, its log lines, and the socket pairs it was handed.
    /// The log lines, kept in memory.
    private final class LogLines: Sendable {
        private let lines = Mutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    private final class Setup {
        let directory: TemporaryDirectory
        let store: StateStore
        let broadcaster: EventBroadcaster
        let logged = LogLines()
        private var descriptors: [Int32] = []
        private var clock: Int64 = 1_000

        /// `before`: events logged before the broadcaster starts (start-up's writes).
        init(_ directory: TemporaryDirectory, hooks: String? = nil, before: [AgentEventKind] = []) throws {
            self.directory = directory
            store = try StateStore.openForWriting(path: directory.file("state.db"))
            for kind in before { try store.recordEvent(kind, detail: .object([]), at: Timestamp(milliseconds: 500)) }
            let logged = self.logged
            let log = Logger(sink: { line in logged.append(line) })
            let runner = HookRunner(directory: hooks ?? directory.file("no-hooks"), timeout: .seconds(30), log: log)
            broadcaster = EventBroadcaster(store: store, hooks: runner, log: log)
        }

        /// A connection: the broadcaster's end and the client's.
        func connection() -> (server: Int32, client: Int32) {
            var pair: [Int32] = [0, 0]
            precondition(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
            descriptors += pair
            return (pair[0], pair[1])
        }

        /// Two connections, both subscribed, each past its acknowledgement line.
        func twoSubscribers() -> ((server: Int32, client: Int32), (server: Int32, client: Int32)) {
            let (first, second) = (connection(), connection())
            #expect(broadcaster.subscribe(first.server) && broadcaster.subscribe(second.server))
            for client in [first.client, second.client] {
                var descriptor = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
                var line: [UInt8] = []
                var byte: UInt8 = 0
                while line.last != 10, poll(&descriptor, 1, 10_000) > 0, recv(client, &byte, 1, 0) == 1 {
                    line.append(byte)
                }
                #expect(line.last == 10, "the acknowledgement")
            }
            return (first, second)
        }

        /// Logs an event of `kind` through this store, a second later than the last.
        func record(_ kind: AgentEventKind, in store: StateStore? = nil) throws {
            clock += 1_000
            try (store ?? self.store).recordEvent(
                kind, detail: .object([("n", .integer(clock))]), at: Timestamp(milliseconds: clock))
        }

        deinit { for fd in descriptors { close(fd) } }
    }

    /// What a client reads: its lines, and whether the stream ended. Reads until `lines` lines
    /// arrived or the stream ended (or 10 s passed); with `lines: nil`, only what is there now.
    private func read(_ fd: Int32, lines wanted: Int? = nil) -> (lines: [String], ended: Bool) {
        var bytes: [UInt8] = []
        var ended = false
        let deadline = ContinuousClock.now + .seconds(10)
        while !ended, ContinuousClock.now < deadline {
            if let wanted, bytes.count(where: { $0 == 10 }) >= wanted { break }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, wanted == nil ? 0 : 100) > 0 else {
                if wanted == nil { break } else { continue }
            }
            var buffer = [UInt8](repeating: 0, count: 65_536)
            let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if count == 0 { ended = true } else if count > 0 { bytes += buffer[..<count] }
        }
        let lines = bytes.split(separator: 10).map { String(decoding: $0, as: UTF8.self) }
        return (lines, ended)
    }

    private func kinds(_ lines: [String]) -> [String] {
        lines.compactMap { line in
            guard case let .object(members)? = try? JSONValue.parse(line) else { return nil }
            guard case let .string(kind)? = members.first(where: { $0.key == "event" })?.value else { return nil }
            return kind
        }
    }

    /// Fills the broadcaster's side of a connection until a send would block.
    private func fill(_ fd: Int32) {
        var size: Int32 = 4_096
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        let chunk = [UInt8](repeating: 0x20, count: 4_096)
        while chunk.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }) > 0 {}
    }

    @Test func aSubscriberHearsItsAcknowledgementThenEveryEventInOrder() throws {
        try TemporaryDirectory.with { directory in
            // What start-up logged happened before anyone could watch: never told.
            let setup = try Setup(directory, before: [.databaseRecovered, .fetched])
            let (server, client) = setup.connection()
            #expect(setup.broadcaster.subscribe(server))
            #expect(read(client, lines: 1).lines == [WatchAck().json.compactText])
            try setup.record(.fetchFailed)
            _ = try setup.store.markStale(reason: "push", at: Timestamp(milliseconds: 50_000))
            try setup.record(.fetched)
            setup.broadcaster.publish()
            #expect(kinds(read(client, lines: 3).lines) == ["fetch-failed", "stale-set", "fetched"])
            // Nothing new: nothing sent.
            setup.broadcaster.publish()
            #expect(read(client).lines.isEmpty)
        }
    }

    @Test func eventsAnotherProcessLoggedAreToldInTheirPlace() throws {
        try TemporaryDirectory.with { directory in
            let setup = try Setup(directory)
            let other = try StateStore.openForWriting(path: directory.file("state.db"))
            let (server, client) = setup.connection()
            #expect(setup.broadcaster.subscribe(server))
            _ = read(client, lines: 1)
            // Among the store's own events...
            try setup.record(.fetched)
            try setup.record(.staleSet, in: other)
            try setup.record(.fetchFailed)
            setup.broadcaster.publish()
            #expect(kinds(read(client, lines: 3).lines) == ["fetched", "stale-set", "fetch-failed"])
            // ...and before the next one, after a publish.
            try setup.record(.staleCleared, in: other)
            try setup.record(.activated)
            setup.broadcaster.publish()
            #expect(kinds(read(client, lines: 2).lines) == ["stale-cleared", "activated"])
        }
    }

    @Test func aWatcherThatDoesNotKeepUpIsDroppedAndTheOthersHearEverything() throws {
        try TemporaryDirectory.with { directory in
            let setup = try Setup(directory)
            let (slow, fast) = setup.twoSubscribers()
            fill(slow.server)
            try setup.record(.fetched)
            setup.broadcaster.publish()
            #expect(kinds(read(fast.client, lines: 1).lines) == ["fetched"])
            #expect(setup.logged.all == ["<4>Dropping a watch client that does not keep up\n"])
            // The slow client finds its stream ended once it reads what was queued.
            #expect(read(slow.client, lines: Int.max).ended)
            try setup.record(.fetchFailed)
            setup.broadcaster.publish()
            #expect(kinds(read(fast.client, lines: 1).lines) == ["fetch-failed"])
            #expect(setup.logged.all.count == 1, "dropped once, not written to again")
        }
    }

    @Test func aSubscriberWhoseSocketIsFullIsRefused() throws {
        try TemporaryDirectory.with { directory in
            let setup = try Setup(directory)
            let (server, _) = setup.connection()
            fill(server)
            #expect(!setup.broadcaster.subscribe(server))
        }
    }

    @Test func anUnsubscribedClientHearsNothingMoreAndClosingEndsEveryStream() throws {
        try TemporaryDirectory.with { directory in
            let setup = try Setup(directory)
            let (leaving, staying) = setup.twoSubscribers()
            setup.broadcaster.unsubscribe(leaving.server)
            try setup.record(.fetched)
            // publish() sends before it returns: what is not in the socket now never will be.
            setup.broadcaster.publish()
            #expect(read(leaving.client).lines.isEmpty)
            setup.broadcaster.closeAll()
            let rest = read(staying.client, lines: Int.max)
            #expect(kinds(rest.lines) == ["fetched"] && rest.ended)
            #expect(!read(leaving.client).ended, "an unsubscribed connection is its owner's to close")
        }
    }

    // Long: under the whole suite the cooperative pool can be held for minutes (see LifecycleTests).
    @Test(.timeLimit(.minutes(10)))
    func theHooksHearTheStaleFlagButNotFetchesOrActivationsFromTheLog() async throws {
        // A hook that exits before the runner writes the event would raise SIGPIPE (see HookRunnerTests).
        signal(SIGPIPE, SIG_IGN)
        try await TemporaryDirectory.with { directory in
            let record = directory.file("record")
            let hook = try directory.write(
                "hooks/10-record", "#!/bin/sh\ncat >/dev/null\necho $RCAGENT_EVENT >> \(record)\n")
            #expect(chmod(hook, 0o755) == 0)
            let setup = try Setup(directory, hooks: directory.file("hooks"))
            try setup.record(.fetched)
            try setup.record(.fetchFailed)
            try setup.record(.activated)  // told to the hooks by activated(_:), with its values
            try setup.record(.staleSet)
            setup.broadcaster.publish()
            // The hooks run one event at a time, in order: had another event reached them, its line
            // would come first.
            let lines = { String(decoding: (try? directory.read("record")) ?? [], as: UTF8.self) }
            #expect(await eventually(.seconds(30)) { lines() == "stale-set\n" }, "\(lines())")
        }
    }
}
