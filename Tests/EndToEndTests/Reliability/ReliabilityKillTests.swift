import Foundation
import Glibc
import RCCore
import Testing

extension Reliability {
    /// kill -9 at any moment loses nothing. Each round starts the daemon stale on a source it
    /// cannot read, then runs a loop that publishes whole documents and fetches (and, every third round,
    /// activates) each in turn, and kills the daemon at a random moment of that loop. After each kill the
    /// database must be intact, each snapshot one whole document, the versions never older than before,
    /// and the acknowledged stale flag still set unless a fetch succeeded after it.
    @Suite struct ReliabilityKillTests {
        static let rounds = 120
        static let keys = 400
        static let stalePing = #"{"op":"message","message":{"data":{"CONFIG_STATE":"STALE"}}}"#

        @Test func killNineAtRandomPointsOfAFetchActivateLoop() throws {
            let sandbox = try Sandbox()
            let seed = UInt64(UInt32.random(in: 0...UInt32.max))
            var random = SplitMix64(seed: seed)
            var published = 0
            var highestActive = 0
            var highestFetched = 0
            var killedStale = 0
            for round in 1...Self.rounds {
                let manual = round % 3 == 0
                try sandbox.writeConfig(extra: manual ? "[Agent]\nActivation=manual" : "")
                try sandbox.publish(#"{"state": "UPDATE", "entries": {"key_0": "#)
                let daemon = try DaemonProcess(sandbox)
                try daemon.waitUntilReady()
                let acknowledgedAt = Int64(Date().timeIntervalSince1970 * 1_000)
                let acknowledged = try SocketClient(path: sandbox.socketPath).request(Self.stalePing)?["ok"] as? Bool
                #expect(
                    acknowledged == true, "round \(round): the stale ping was not acknowledged; log:\n\(daemon.log)")

                let loop = PublishFetchLoop(sandbox, firstVersion: published + 1, keys: Self.keys) { client, _ in
                    !manual || client.request(#"{"op":"activate"}"#) != nil
                }
                // A random moment of the fetch/activate loop to kill at: the randomness is the test.
                usleep(UInt32(random.next() % 250_000))
                daemon.killHard()
                published = loop.finish()

                let context = "round \(round) (seed \(seed), manual activation \(manual))"
                let state = try StateSnapshot(path: sandbox.databasePath)
                #expect(state.integrity == "ok", "\(context)")
                #expect(
                    StateSnapshot.isWhole(state.active, version: state.activeVersion, keys: Self.keys),
                    "\(context): active snapshot \(state.activeVersion ?? "-") has \(state.active.count) keys, values \(Set(state.active.values).sorted().prefix(3))"
                )
                #expect(
                    StateSnapshot.isWhole(state.fetched, version: state.fetchedVersion, keys: Self.keys),
                    "\(context): fetched snapshot \(state.fetchedVersion ?? "-") has \(state.fetched.count) keys")
                let active = Int(state.activeVersion ?? "0") ?? 0
                let fetched = Int(state.fetchedVersion ?? "0") ?? 0
                #expect(active >= highestActive, "\(context): active went back from \(highestActive) to \(active)")
                #expect(fetched >= highestFetched, "\(context): fetched went back from \(highestFetched) to \(fetched)")
                highestActive = max(highestActive, active)
                highestFetched = max(highestFetched, fetched)
                #expect(
                    state.staleSet || (state.lastSuccess ?? 0) >= acknowledgedAt,
                    "\(context): the stale flag was cleared without a successful fetch after it was set")
                if state.staleSet { killedStale += 1 }
            }
            print(
                "kill -9: \(Self.rounds) rounds (seed \(seed)), \(published) documents published, \(killedStale) kills before the round's first fetch"
            )
            // The kills must land both before and after fetches, or the loop tested nothing.
            #expect(killedStale > 0 && killedStale < Self.rounds, "\(killedStale) of \(Self.rounds)")
            #expect(highestFetched > Self.rounds, "several documents are fetched per round: \(highestFetched)")
        }
    }
}
