import Foundation
import Glibc
import RCCore
import TestSupport
import Testing

extension Reliability {
    /// A flapping config source and a crowd of socket clients: the agent never activates anything but
    /// a whole valid document, converges when the source settles, answers every client, and ends with
    /// the descriptors and threads it started with.
    @Suite struct ReliabilityLoadTests {
        static let keys = 50

        @Test func flappingHTTPSourceNeverActivatesBadDataAndConverges() throws {
            let sandbox = try Sandbox()
            let server = try ConfigServer(in: sandbox)
            try server.serve(Sandbox.document(version: 1, keys: Self.keys))
            try sandbox.writeConfig(extra: "Type=http\nURL=\(server.url)\n[Agent]\nMinimumFetchInterval=0")
            let daemon = try sandbox.startDaemon()
            #expect(try sandbox.cli("fetch", "--wait").status == 0)
            let descriptors = daemon.openDescriptors
            let requestsBefore = server.requests.count

            let v2 = Sandbox.document(version: 2, keys: Self.keys)
            let v3 = Sandbox.document(version: 3, keys: Self.keys)
            try server.setMode([
                "kind": "cycle",
                "modes": [
                    ["kind": "document", "body": v2],
                    ["kind": "status", "status": 500, "body": "oops"],
                    ["kind": "reset"],
                    ["kind": "status", "status": 200, "body": "<html>maintenance</html>"],
                    ["kind": "truncated", "body": v3],
                    ["kind": "status", "status": 200, "body": #"{"entries": 5}"#],
                    ["kind": "status", "status": 503, "headers": ["Retry-After": "1"]],
                    ["kind": "document", "body": v3],
                    ["kind": "status", "status": 200, "body": #"{"state": "UPDATE", "entries": ["key_0", "v9"]}"#],
                ] as [[String: Any]],
            ])
            var succeeded = 0
            let rounds = 45
            for round in 1...rounds {
                // Forced, past backoff and throttle: every round reaches the server.
                let fetch = try sandbox.cli("fetch", "--force", "--ignore-throttle", "--wait")
                if fetch.status == 0 { succeeded += 1 }
                let state = try StateSnapshot(path: sandbox.databasePath)
                #expect(state.integrity == "ok", "round \(round)")
                #expect(
                    ["1", "2", "3"].contains(state.activeVersion ?? "-")
                        && StateSnapshot.isWhole(state.active, version: state.activeVersion, keys: Self.keys),
                    "round \(round): active \(state.activeVersion ?? "-") with \(state.active.count) keys")
                let value = try sandbox.cli("get", "key_0").stdout
                #expect(["v1\n", "v2\n", "v3\n"].contains(value), "round \(round): get printed \(value)")
            }
            #expect(succeeded == rounds * 2 / 9, "two of every nine answers are whole documents")
            #expect(server.requests.count == requestsBefore + rounds, "one request per fetch, no hidden retries")

            try server.serve(Sandbox.document(version: 4, keys: Self.keys))
            #expect(try sandbox.cli("fetch", "--force", "--ignore-throttle", "--wait").status == 0)
            #expect(try sandbox.cli("get", "key_0").stdout == "v4\n")
            #expect(
                eventually { daemon.openDescriptors <= descriptors }, "\(daemon.openDescriptors) > \(descriptors)")
            #expect(daemon.stop() == 0)
        }

        /// The file source rewritten in place (not renamed), deleted and filled with garbage while the
        /// agent watches it: readers only ever see whole versions, and the last write wins.
        @Test func flappingFileSourceConvergesOnTheLastWholeDocument() throws {
            let sandbox = try Sandbox()
            try sandbox.publish(Sandbox.document(version: 1, keys: Self.keys))
            try sandbox.writeConfig(extra: "[Agent]\nMinimumFetchInterval=0")
            let daemon = try sandbox.startDaemon()
            #expect(try sandbox.cli("fetch", "--wait").status == 0)

            let remote = sandbox.remotePath
            let finished = DispatchSemaphore(value: 0)
            let writer = Thread {
                var random = SplitMix64(seed: 99)
                for version in 2...120 {
                    switch random.next() % 4 {
                    case 0: _ = unlink(remote)
                    case 1: try? "{\"state\": \"UPD".write(toFile: remote, atomically: false, encoding: .utf8)
                    default:
                        // In place, in two writes: a reader can catch the first half.
                        let text = Sandbox.document(version: version, keys: Self.keys)
                        let fd = open(remote, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
                        let bytes = Array(text.utf8)
                        let half = bytes.count / 2
                        _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, half) }
                        // A random gap between the halves: the timing is the load, not a wait.
                        usleep(UInt32(random.next() % 2_000))
                        _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + half, bytes.count - half) }
                        close(fd)
                    }
                    // A random pace of changes (the flapping under test), not a wait for an event.
                    usleep(UInt32(random.next() % 20_000))
                }
                finished.signal()
            }
            writer.start()
            var seen: Set<String> = []
            let deadline = Date(timeIntervalSinceNow: 2.5)
            while Date() < deadline {
                let value = try sandbox.cli("get", "key_0").stdout
                #expect(
                    value.hasPrefix("v") && value.hasSuffix("\n") && Int(value.dropFirst().dropLast()) != nil,
                    "\(value)")
                seen.insert(value)
            }
            finished.wait()
            try sandbox.publish(Sandbox.document(version: 200, keys: Self.keys))
            #expect(try eventually { try sandbox.cli("get", "key_0").stdout == "v200\n" }, "\(daemon.log)")
            #expect(seen.count > 1, "the readers saw the source change: \(seen.sorted())")
            let state = try StateSnapshot(path: sandbox.databasePath)
            #expect(state.integrity == "ok")
            #expect(StateSnapshot.isWhole(state.active, version: state.activeVersion, keys: Self.keys))
            #expect(daemon.process.isRunning)
            #expect(daemon.stop() == 0)
        }

        @Test func thousandSocketClientsAreAllAnsweredAndLeaveNothingBehind() throws {
            var limit = rlimit()
            getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
            limit.rlim_cur = max(limit.rlim_cur, min(limit.rlim_max, 4_096))
            setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)

            let sandbox = try Sandbox()
            try sandbox.publish(Sandbox.document(version: 1))
            let daemon = try sandbox.startDaemon()
            #expect(try sandbox.cli("fetch", "--wait").status == 0)
            let descriptors = daemon.openDescriptors
            let threads = daemon.threadCount

            // 1,000 connections open at once, each asking once.
            var crowd: [SocketClient] = []
            for _ in 0..<1_000 { crowd.append(try SocketClient(path: sandbox.socketPath)) }
            for client in crowd { client.write(#"{"op":"ping"}"# + "\n") }
            var answers: [String: Int] = [:]
            for client in crowd {
                let line = client.readLine(timeout: 20) ?? "no answer"
                let kind =
                    line.contains(#""ok":true"#) ? "ok" : line.contains(#""code":"busy""#) ? "busy" : "other: \(line)"
                answers[kind, default: 0] += 1
            }
            #expect(answers["ok", default: 0] + answers["busy", default: 0] == 1_000, "\(answers)")
            #expect(answers["ok", default: 0] >= 64, "\(answers)")
            crowd.removeAll()

            // 1,000 more from 8 threads, each connecting, asking for status and hanging up.
            let socket = sandbox.socketPath
            let answered = Counter()
            DispatchQueue.concurrentPerform(iterations: 8) { _ in
                for _ in 0..<125 {
                    guard let client = try? SocketClient(path: socket) else { continue }
                    if client.request(#"{"op":"status"}"#) != nil { answered.add() }
                }
            }
            #expect(answered.value == 1_000)

            #expect(
                eventually { daemon.openDescriptors <= descriptors }, "\(daemon.openDescriptors) > \(descriptors)")
            #expect(
                eventually { daemon.threadCount <= threads + 2 }, "\(daemon.threadCount) threads, \(threads) before"
            )
            #expect(try sandbox.cli("get", "key_0").stdout == "v1\n")
            #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
            #expect(daemon.stop() == 0)
        }
    }
}

/// A count several threads add to.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    func add() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
