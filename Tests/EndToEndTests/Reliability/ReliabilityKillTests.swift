import Foundation
import Glibc
import RCFuzzing
import Testing

/// SPEC §9: kill -9 at any moment loses nothing. The daemon is killed at random points of a
/// fetch/activate loop, and after each kill the database must be intact, each snapshot one whole
/// document, the active version never older than before, and an acknowledged stale flag still set
/// unless the fetch it asked for succeeded.
@Suite struct ReliabilityKillTests {
    static let iterations = 120
    static let keys = 400
    static let stalePing = #"{"op":"message","message":{"data":{"CONFIG_STATE":"STALE"}}}"#

    @Test func killNineAtRandomPointsOfAFetchActivateLoop() throws {
        let sandbox = try Sandbox()
        let seed = UInt64(UInt32.random(in: 0...UInt32.max))
        var random = SplitMix64(seed: seed)
        var highestActive = 0
        var outcomes: [String: Int] = [:]
        for round in 1...Self.iterations {
            // Every third round activates by hand, every fourth publishes a document that cannot
            // be read (the fetch fails, so the stale flag must survive).
            let manual = round % 3 == 0
            let broken = round % 4 == 1
            try sandbox.writeConfig(extra: manual ? "[Agent]\nActivation=manual" : "")
            try sandbox.publish(
                broken
                    ? #"{"state": "UPDATE", "entries": {"key_0": "# : Sandbox.document(version: round, keys: Self.keys))

            let daemon = try DaemonProcess(sandbox)
            try daemon.waitUntilReady()
            let client = try SocketClient(path: sandbox.socketPath)
            let acknowledged = client.request(Self.stalePing)?["ok"] as? Bool == true
            // The broken rounds' failures put the agent in backoff, which a push waits out; a
            // manual fetch does not, so every round really fetches.
            client.write(#"{"op":"fetch","force":true}"# + "\n")
            if manual { client.write(#"{"op":"activate"}"# + "\n") }
            usleep(UInt32(random.next() % 120_000))
            daemon.killHard()

            let context = "round \(round) (seed \(seed), manual \(manual), broken \(broken))"
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
            #expect(active >= highestActive, "\(context): active went back from \(highestActive) to \(active)")
            highestActive = max(highestActive, active)
            #expect(acknowledged, "\(context): the stale ping was not acknowledged; log:\n\(daemon.log)")
            if acknowledged && broken {
                #expect(state.staleSet, "\(context): an acknowledged stale flag was lost")
            } else if acknowledged {
                #expect(
                    state.staleSet || state.fetchedVersion == "\(round)",
                    "\(context): the stale flag was cleared without fetching this round's document")
            }
            let outcome = state.fetchedVersion == "\(round)" ? "fetched" : state.staleSet ? "still-stale" : "other"
            outcomes[outcome, default: 0] += 1
        }
        print("kill -9 rounds (seed \(seed)): \(outcomes.sorted { $0.key < $1.key })")
        // The kills must land on both sides of the fetch, or the loop tested nothing.
        #expect(outcomes["fetched", default: 0] > 0 && outcomes["still-stale", default: 0] > 0, "\(outcomes)")
        #expect(highestActive > 0)
    }
}
