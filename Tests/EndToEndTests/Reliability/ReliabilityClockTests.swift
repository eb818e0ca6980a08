import Foundation
import Glibc
import TestSupport
import Testing

extension Reliability {
    /// The wall clock stepping under the agent: an RTC that lost power, NTP correcting it. Stored fetch
    /// times are wall-clock times; a step back must not stall fetching for as long as the step, and a
    /// step forward may end a wait early but must not start a burst of requests.
    ///
    /// The daemon runs under libfaketime (Debian's `faketime`): its wall clock is the real one shifted
    /// by what a file says, re-read on every call, while monotonic time runs on as it does when a real
    /// clock steps. libfaketime empties Swift's `CommandLine.arguments`, so the daemon finds its config
    /// through `RCAGENT_CONFIG`; the CLI and the test run on the real clock.
    @Suite(.serialized) struct ReliabilityClockTests {
        static let library = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
        static let day: TimeInterval = 86_400

        struct ShiftedDaemon {
            let daemon: DaemonProcess
            let offsetFile: String

            init(_ sandbox: Sandbox) throws {
                offsetFile = sandbox.root.appendingPathComponent("faketime").path
                try "+0".write(toFile: offsetFile, atomically: true, encoding: .utf8)
                daemon = try DaemonProcess(
                    sandbox, arguments: [],
                    environment: [
                        "RCAGENT_CONFIG": sandbox.configPath, "LD_PRELOAD": ReliabilityClockTests.library,
                        "FAKETIME_TIMESTAMP_FILE": offsetFile, "FAKETIME_NO_CACHE": "1",
                        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
                    ])
                try daemon.waitUntilReady()
            }

            /// Steps the daemon's wall clock to the real time plus `seconds`.
            func step(to seconds: TimeInterval) throws {
                try (seconds >= 0 ? "+\(Int(seconds))" : "\(Int(seconds))").write(
                    toFile: offsetFile, atomically: true, encoding: .utf8)
            }
        }

        /// The daemon's next fetch, from its own answer to `status`, as seconds from its own now.
        static func nextFetch(_ sandbox: Sandbox, clockOffset: TimeInterval) throws -> TimeInterval? {
            let status = try SocketClient(path: sandbox.socketPath).request(#"{"op":"status"}"#)
            guard let text = status?["nextFetchAt"] as? String,
                let next = ISO8601DateFormatter.internet.date(from: text)
            else { return nil }
            return next.timeIntervalSince(Date(timeIntervalSinceNow: clockOffset))
        }

        func sandbox(interval: String = "1h") throws -> (Sandbox, ConfigServer) {
            let sandbox = try Sandbox()
            let server = try ConfigServer(in: sandbox)
            try server.serve(Sandbox.document(version: 1), etag: #""v1""#)
            try sandbox.writeConfig(extra: "Type=http\nURL=\(server.url)\n[Agent]\nMinimumFetchInterval=\(interval)")
            return (sandbox, server)
        }

        /// The premise of this suite: the daemon's wall clock really moves with the offset file.
        @Test func libfaketimeShiftsTheDaemonsClock() throws {
            let (sandbox, server) = try sandbox()
            let shifted = try ShiftedDaemon(sandbox)
            #expect(try sandbox.cli("fetch", "--wait").status == 0, "the start-up fetch is over")
            let events = try SocketClient(path: sandbox.socketPath)
            #expect(events.watch())
            try shifted.step(to: -Self.day)
            try server.serve(Sandbox.document(version: 2), etag: #""v2""#)
            let fetch = try sandbox.cli("fetch", "--force", "--wait")
            #expect(fetch.status == 0, "\(fetch.stdout)\(fetch.stderr)")
            let fetched = events.event {
                $0["event"] as? String == "fetched" && $0["templateVersion"] as? String == "2"
            }
            let at = try #require((fetched?["at"] as? String).flatMap { ISO8601DateFormatter.internet.date(from: $0) })
            #expect(abs(Date().timeIntervalSince(at) - Self.day) < 60, "the fetched event is a day behind: \(at)")
            #expect(shifted.daemon.stop() == 0)
        }

        @Test func stepBackAfterASuccessKeepsTheNextFetchWithinOneInterval() throws {
            let (sandbox, server) = try sandbox()
            let shifted = try ShiftedDaemon(sandbox)
            #expect(try sandbox.cli("fetch", "--wait").status == 0)
            try shifted.step(to: -Self.day)
            let next = try #require(try Self.nextFetch(sandbox, clockOffset: -Self.day))
            #expect(next <= 3_600 + 5, "next fetch \(next) s away after the clock went back a day")
            #expect(next > 3_000, "the interval still holds: \(next)")

            // And the agent still fetches on its own clock: a push is not refused as "recent" for a day.
            try server.serve(Sandbox.document(version: 2), etag: #""v2""#)
            #expect(try sandbox.cli("mark-stale", "--reason", "test").status == 0)
            #expect(try sandbox.cli("fetch", "--wait").status == 0)
            #expect(try sandbox.cli("get", "key_0").stdout == "v2\n")
            #expect(shifted.daemon.log.contains("clock"), "the step is logged:\n\(shifted.daemon.log)")
            #expect(shifted.daemon.stop() == 0)
        }

        @Test(arguments: [(503, "120"), (500, nil)] as [(Int, String?)])
        func stepBackDuringABackoffDoesNotStretchIt(status: Int, retryAfter: String?) throws {
            let (sandbox, server) = try sandbox()
            let shifted = try ShiftedDaemon(sandbox)
            #expect(try sandbox.cli("fetch", "--wait").status == 0, "the start-up fetch is over")
            var mode: [String: Any] = ["kind": "status", "status": status]
            if let retryAfter { mode["headers"] = ["Retry-After": retryAfter] }
            try server.setMode(mode)
            #expect(try sandbox.cli("fetch", "--force", "--wait").status == 1)
            let before = try #require(try Self.nextFetch(sandbox, clockOffset: 0))

            try shifted.step(to: -Self.day)
            let after = try #require(try Self.nextFetch(sandbox, clockOffset: -Self.day))
            // Backoff after one failure: 2 min ±50%; the throttle: the server's 120 s.
            #expect(after <= before + 5, "the wait was \(before) s before the step and \(after) s after it")
            #expect(after <= 185)
            #expect(shifted.daemon.stop() == 0)
        }

        @Test func stepForwardEndsAThrottleWithOneRequestAndNoBurst() throws {
            let (sandbox, server) = try sandbox()
            let shifted = try ShiftedDaemon(sandbox)
            #expect(try sandbox.cli("fetch", "--wait").status == 0, "the start-up fetch is over")
            try server.setMode(["kind": "status", "status": 429, "headers": ["Retry-After": "600"]])
            #expect(try sandbox.cli("fetch", "--force", "--wait").status == 1)
            #expect(try sandbox.cli("fetch", "--force", "--wait").status == 1, "the throttle holds")
            let throttled = server.requests.count
            #expect(throttled == 2, "the start-up fetch and the throttled one")

            try server.serve(Sandbox.document(version: 2), etag: #""v2""#)
            try shifted.step(to: Self.day)
            #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0, "a day later the throttle is over")
            #expect(try sandbox.cli("get", "key_0").stdout == "v2\n")
            // No burst to wait for: the daemon's own next fetch is a whole interval after the success
            // (not a deadline from before the step), and that success was the one request since.
            let next = try #require(try Self.nextFetch(sandbox, clockOffset: Self.day))
            #expect(next > 3_600 - 60, "the next fetch is \(next) s away")
            #expect(server.requests.count == throttled + 1, "one request after the step")
            #expect(shifted.daemon.stop() == 0)
        }

        /// The real clock set to itself (a step of microseconds, harmless to the machine): the kernel
        /// cancels the daemon's CANCEL_ON_SET timer as it does after `date -s`, an NTP step or a resume
        /// from suspend, and a stale cache whose fetches failed is fetched at once, past the backoff.
        @Test func aClockSetFetchesAStaleCacheAtOnce() throws {
            let (sandbox, server) = try sandbox()
            try server.setMode(["kind": "status", "status": 500])
            let daemon = try sandbox.startDaemon()
            #expect(try sandbox.cli("fetch", "--force", "--wait").status == 1)
            try server.serve(Sandbox.document(version: 2), etag: #""v2""#)
            // The push's round is over when `--wait` returns: it waited out the backoff.
            let push = try sandbox.cli("notify", "--wait", #"{"data":{"CONFIG_STATE":"STALE"}}"#)
            #expect(push.status == 0 && push.stdout.contains("not fetched: backing off after"), "\(push)")
            #expect(try sandbox.cli("get", "key_0").status == 1)

            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            try #require(clock_settime(CLOCK_REALTIME, &now) == 0, "setting the clock needs CAP_SYS_TIME")
            #expect(try eventually(10) { try sandbox.cli("get", "key_0").stdout == "v2\n" }, "\(daemon.log)")
            #expect(
                daemon.log.contains("The wall clock was set (or the system resumed); fetching (the cache is stale)"))
            #expect(daemon.stop() == 0)
        }

        /// The boot case without libfaketime: the device starts with its clock far behind the times
        /// it stored (an RTC that lost power). The stored times are rebased, so the next fetch is due
        /// within one interval of the device's own now, and the agent serves and fetches as usual.
        @Test func bootWithTheClockBehindTheStoredTimes() throws {
            let (sandbox, server) = try sandbox(interval: "10min")
            var daemon = try sandbox.startDaemon()
            #expect(try sandbox.cli("fetch", "--wait").status == 0)
            #expect(daemon.stop() == 0)
            // Moving every stored time a year ahead is the same as the clock going back a year.
            let year: Int64 = 365 * 86_400_000
            let shift = try runProcess(
                "/usr/bin/sqlite3",
                [
                    sandbox.databasePath,
                    "UPDATE fetch_state SET last_attempt_at = last_attempt_at + \(year), last_success_at = last_success_at + \(year)",
                ])
            #expect(shift.status == 0, "\(shift.stderr)")

            daemon = try sandbox.startDaemon()
            let next = try #require(try Self.nextFetch(sandbox, clockOffset: 0))
            #expect(next <= 600 + 5, "next fetch \(next) s away")
            try server.serve(Sandbox.document(version: 2), etag: #""v2""#)
            #expect(try sandbox.cli("mark-stale", "--reason", "test").status == 0)
            #expect(try sandbox.cli("fetch", "--wait").status == 0)
            #expect(try sandbox.cli("get", "key_0").stdout == "v2\n")
            #expect(daemon.stop() == 0)
        }
    }
}

extension ISO8601DateFormatter {
    nonisolated(unsafe) static let internet = ISO8601DateFormatter()
}
