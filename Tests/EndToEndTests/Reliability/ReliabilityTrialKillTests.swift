import Foundation
import Glibc
import RCCore
import TestSupport
import Testing

extension Reliability {
    /// Safe activation survives kill -9 at any moment: each round starts the daemon with a health
    /// check (failing every third version, slow on another), runs a loop that publishes, fetches
    /// (each activation a trial) and now and then asks for `rollback`, and kills the daemon at a
    /// random moment of it. After each kill the active snapshot is one whole document and no rejected
    /// version is active; after the next start, a trial the kill left pending has ended rolled back
    /// (`interrupted`) before the daemon said it was ready.
    @Suite struct ReliabilityTrialKillTests {
        static let rounds = 100
        static let keys = 50

        @Test func killNineAtRandomPointsOfTrialsAndRollbacks() throws {
            let sandbox = try Sandbox()
            let check = sandbox.root.appendingPathComponent("check").path
            try """
            #!/bin/sh
            case $(( ${RCAGENT_TEMPLATE_VERSION:-0} % 3 )) in
                0) exit 1 ;;
                1) sleep 0.1; exit 0 ;;
                *) exit 0 ;;
            esac

            """.write(toFile: check, atomically: true, encoding: .utf8)
            chmod(check, 0o755)
            try sandbox.writeConfig(extra: "[Activation]\nHealthCheck=\(check)\nHealthTimeout=10s\nHistory=5")
            let seed = UInt64(UInt32.random(in: 0...UInt32.max))
            var random = SplitMix64(seed: seed)
            var published = 0
            var interrupted = 0
            var pendingBefore: String?
            for round in 1...Self.rounds {
                let context = "round \(round) (seed \(seed))"
                let daemon = try DaemonProcess(sandbox)
                try daemon.waitUntilReady()
                // Ready means the interrupted trial is already rolled back.
                let started = try TrialState(path: sandbox.databasePath)
                #expect(started.trialHistoryID == nil, "\(context): a trial is still pending after the start")
                if let pendingBefore {
                    interrupted += 1
                    #expect(
                        started.outcomes[pendingBefore] == "rolled-back interrupted",
                        "\(context): the interrupted trial (history \(pendingBefore)) ended \(started.outcomes[pendingBefore] ?? "dropped")"
                    )
                }

                // Each fetch activates (a trial); every fourth version, a rollback is asked for too.
                let loop = PublishFetchLoop(sandbox, firstVersion: published + 1, keys: Self.keys) { client, version in
                    version % 4 != 0 || client.request(#"{"op":"rollback"}"#) != nil
                }
                // A random moment of the loop to kill at: the randomness is the test.
                usleep(UInt32(random.next() % 400_000))
                daemon.killHard()
                published = loop.finish()

                let state = try StateSnapshot(path: sandbox.databasePath)
                #expect(state.integrity == "ok", "\(context)")
                #expect(
                    StateSnapshot.isWhole(state.active, version: state.activeVersion, keys: Self.keys),
                    "\(context): active snapshot \(state.activeVersion ?? "-") has \(state.active.count) keys")
                let trials = try TrialState(path: sandbox.databasePath)
                if let version = state.activeVersion {
                    // A pending trial's version is not rejected yet; otherwise nothing rejected is active.
                    #expect(!trials.rejected.contains(version), "\(context): rejected version \(version) is active")
                }
                pendingBefore = trials.trialHistoryID
            }
            #expect(interrupted > 0, "no kill landed during a trial in \(Self.rounds) rounds (seed \(seed))")
            print("trial kill loop: \(interrupted) of \(Self.rounds) kills landed during a trial (seed \(seed))")
        }
    }
}

/// The trial, outcomes and rejected versions as sqlite3 reads them from the state database.
struct TrialState {
    var trialHistoryID: String?
    /// History id → "outcome reason".
    var outcomes: [String: String]
    var rejected: Set<String>

    init(path: String) throws {
        func query(_ sql: String) throws -> [[String]] {
            let result = try runProcess("/usr/bin/sqlite3", ["-readonly", "-separator", "\u{1f}", path, sql])
            guard result.status == 0 else { throw DaemonError("sqlite3 \(sql): \(result.stderr)") }
            return result.stdout.split(separator: "\n").map {
                $0.split(separator: "\u{1f}", omittingEmptySubsequences: false).map(String.init)
            }
        }
        trialHistoryID = try query("SELECT history_id FROM trial").first?.first
        outcomes = Dictionary(
            try query("SELECT id, outcome || coalesce(' ' || reason, '') FROM history").map { ($0[0], $0[1]) }
        ) { $1 }
        rejected = Set(try query("SELECT template_version FROM rejected_versions").compactMap(\.first))
    }
}
