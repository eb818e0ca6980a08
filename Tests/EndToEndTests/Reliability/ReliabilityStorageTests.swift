import Foundation
import Glibc
import RCCore
import TestSupport
import Testing

extension Reliability {
    /// The state directory going wrong under a running agent: a full disk, a read-only file system,
    /// a damaged database, a torn WAL. In each the agent keeps serving the last good values, says
    /// what is wrong, and recovers by itself when the disk does (nothing but a corrupt
    /// database may lose the last good snapshot).
    @Suite(.serialized) struct ReliabilityStorageTests {
        /// A document big enough not to fit in what a full disk has left.
        static func large(version: Int) -> String { Sandbox.document(version: version, keys: 4_000) }

        @Test func fullDiskKeepsTheLastGoodValuesAndRecoversWhenSpaceReturns() throws {
            let sandbox = try Sandbox()
            let disk = try TmpfsMount(at: sandbox.statePath, kilobytes: 1_024)
            try sandbox.publish(Sandbox.document(version: 1))
            let daemon = try sandbox.startDaemon()
            #expect(try sandbox.cli("fetch", "--wait").status == 0)
            #expect(try sandbox.cli("get", "key_0").stdout == "v1\n")

            let filler = disk.fill()
            try sandbox.publish(Self.large(version: 2))
            let failed = try sandbox.cli("fetch", "--force", "--wait")
            #expect(failed.status == 1, "\(failed.stdout)\(failed.stderr)")
            #expect(failed.stderr.contains("full"), "the error says the disk is full: \(failed.stderr)")

            // Everything a reader needs still works, on the last good values.
            #expect(try sandbox.cli("get", "key_0").stdout == "v1\n")
            #expect(try sandbox.cli("get", "greeting").stdout == "hello\n")
            #expect(try sandbox.cli("status").status == 0)
            let ping = try SocketClient(path: sandbox.socketPath).request(#"{"op":"ping"}"#)
            #expect(ping?["ok"] as? Bool == true)
            #expect(daemon.process.isRunning)

            // A stale ping on the full disk: acknowledged only if the flag was really stored.
            let stale = try SocketClient(path: sandbox.socketPath).request(
                #"{"op":"message","message":{"data":{"CONFIG_STATE":"STALE"}}}"#)
            let flagStored = stale?["ok"] as? Bool == true
            #expect(flagStored || (stale?["error"] as? [String: Any])?["message"] as? String != nil, "\(stale ?? [:])")

            try FileManager.default.removeItem(atPath: filler)
            #expect(
                try eventually(20) { try sandbox.cli("get", "key_0").stdout == "v2\n" },
                "after space returns the agent fetches by itself (it is stale or due a retry); log:\n\(daemon.log)")
            let state = try StateSnapshot(path: sandbox.databasePath)
            #expect(state.integrity == "ok")
            #expect(StateSnapshot.isWhole(state.active, version: state.activeVersion, keys: 4_000))
            #expect(!state.staleSet)
            #expect(daemon.stop() == 0)
        }

        /// The state directory read-only at start (an overlay that failed to mount read-write). Such a
        /// mount cannot be made under a running daemon that has the database open for writing (the
        /// kernel refuses with EBUSY), so the daemon meets it at start.
        @Test func aStaleFlagTheFullDiskRefusedIsWrittenWhenSpaceReturns() throws {
            let sandbox = try Sandbox()
            let disk = try TmpfsMount(at: sandbox.statePath, kilobytes: 1_024)
            try sandbox.publish(Sandbox.document(version: 1))
            let daemon = try sandbox.startDaemon()
            #expect(try sandbox.cli("fetch", "--wait").status == 0)
            try sandbox.publish("not a document: every fetch fails")
            #expect(try eventually { try sandbox.cli("status").stdout.contains("last fetch:   failure") })

            let filler = disk.fill()
            let ping = try SocketClient(path: sandbox.socketPath).request(
                #"{"op":"message","message":{"data":{"CONFIG_STATE":"STALE"}}}"#)
            let refused = ping?["ok"] as? Bool == false
            #expect(refused, "the full disk refused the flag: else this tests nothing; \(ping ?? [:])")
            // The code says what failed: the store, not a daemon bug (it was "internal").
            #expect((ping?["error"] as? [String: Any])?["code"] as? String == "storage", "\(ping ?? [:])")
            let cli = try sandbox.cli("notify", #"{"data":{"CONFIG_STATE":"STALE"}}"#)
            #expect(cli.status == 1 && cli.stderr.contains("full"), "\(cli)")
            try FileManager.default.removeItem(atPath: filler)
            #expect(
                try eventually(15) { try StateSnapshot(path: sandbox.databasePath).staleSet },
                "the flag is stored once the disk takes writes; log:\n\(daemon.log)")
            #expect(daemon.stop() == 0)
        }

        @Test func readOnlyStateDirectoryKeepsServingAndRecovers() throws {
            let sandbox = try Sandbox()
            let disk = try TmpfsMount(at: sandbox.statePath, kilobytes: 4_096)
            try sandbox.publish(Sandbox.document(version: 1))
            var daemon = try sandbox.startDaemon()
            #expect(try sandbox.cli("fetch", "--wait").status == 0)
            #expect(daemon.stop() == 0)

            try disk.remount(readOnly: true)
            try sandbox.publish(Sandbox.document(version: 2))
            let reader = try sandbox.cli("get", "key_0")
            #expect(reader.stdout == "v1\n", "rcagent get on a read-only state directory: \(reader.stderr)")
            #expect(try sandbox.cli("list").stdout.contains("key_0"))
            #expect(try sandbox.cli("status").status == 0)
            let refused = try DaemonProcess(sandbox)
            #expect(eventually { !refused.process.isRunning }, "the daemon refuses a state it cannot write")
            refused.killHard()
            #expect(refused.process.terminationReason == .exit && refused.process.terminationStatus != 0)
            #expect(refused.log.contains("read-only") || refused.log.contains("readonly"), "\(refused.log)")
            #expect(try sandbox.cli("get", "key_0").stdout == "v1\n")

            try disk.remount(readOnly: false)
            daemon = try sandbox.startDaemon()
            #expect(try sandbox.cli("mark-stale", "--reason", "test").status == 0)
            #expect(try eventually { try sandbox.cli("get", "key_0").stdout == "v2\n" }, "\(daemon.log)")
            #expect(try StateSnapshot(path: sandbox.databasePath).integrity == "ok")
            #expect(daemon.stop() == 0)
        }

        /// Each way a database file gets damaged: the agent starts, either reads it whole or moves it
        /// aside and starts from the defaults marked stale, and one fetch brings the config back.
        @Test(arguments: ["garbage-pages", "truncated", "zeroed-header", "not-a-database"])
        func damagedDatabaseIsSurvived(damage: String) throws {
            let sandbox = try Sandbox()
            try sandbox.publish(Sandbox.document(version: 1, keys: 500))
            var daemon = try sandbox.startDaemon()
            #expect(try sandbox.cli("fetch", "--wait").status == 0)
            #expect(daemon.stop() == 0)
            // Damage the database file itself, not a copy of its pages still waiting in the WAL.
            #expect(
                try runProcess("/usr/bin/sqlite3", [sandbox.databasePath, "PRAGMA wal_checkpoint(TRUNCATE)"]).status
                    == 0)

            let path = sandbox.databasePath
            let size = try #require(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
            let handle = try #require(FileHandle(forUpdatingAtPath: path))
            switch damage {
            case "garbage-pages":
                var random = SplitMix64(seed: 42)
                try handle.seek(toOffset: UInt64(size / 3))
                handle.write(Data((0..<(size / 3)).map { _ in UInt8(truncatingIfNeeded: random.next()) }))
            case "truncated":
                try handle.truncate(atOffset: UInt64(size / 2))
            case "zeroed-header":
                handle.write(Data(count: 100))
            default:
                try handle.truncate(atOffset: 0)
                handle.write(Data("this is not a database at all\n".utf8))
            }
            try handle.close()

            daemon = try sandbox.startDaemon()
            #expect(try sandbox.cli("get", "greeting").stdout == "hello\n", "defaults are served; log:\n\(daemon.log)")
            let moved = try FileManager.default.contentsOfDirectory(atPath: sandbox.statePath).filter {
                $0.hasPrefix("state.db.corrupt-")
            }
            #expect(!moved.isEmpty, "the damaged database is kept aside for inspection")
            #expect(daemon.log.contains("moved it to"), "\(daemon.log)")
            // Stale after recovery, so the agent fetches by itself: the config comes back.
            #expect(try eventually { try sandbox.cli("get", "key_0").stdout == "v1\n" }, "\(daemon.log)")
            let state = try StateSnapshot(path: sandbox.databasePath)
            #expect(state.integrity == "ok")
            #expect(StateSnapshot.isWhole(state.active, version: state.activeVersion, keys: 500))
            let status = try sandbox.cli("status").stdout
            #expect(
                status.contains("recovered:") && status.contains(moved.sorted().first ?? "?"),
                "status tells of it: \(status)")
            #expect(daemon.stop() == 0)
        }

        /// A torn WAL (power lost while SQLite appended to it): cut anywhere, the database opens
        /// intact at one whole committed snapshot, never older than the last checkpoint, and a longer
        /// WAL never gives an older snapshot than a shorter one.
        @Test func truncatedWALOpensAtAWholeCommittedSnapshot() throws {
            let sandbox = try Sandbox()
            let keys = 300
            try sandbox.publish(Sandbox.document(version: 1, keys: keys))
            let daemon = try sandbox.startDaemon()
            #expect(try sandbox.cli("fetch", "--wait").status == 0)
            #expect(
                try runProcess("/usr/bin/sqlite3", [sandbox.databasePath, "PRAGMA wal_checkpoint(TRUNCATE)"]).status
                    == 0)
            for version in 2...6 {
                try sandbox.publish(Sandbox.document(version: version, keys: keys))
                #expect(try eventually { try sandbox.cli("get", "key_0").stdout == "v\(version)\n" })
            }
            daemon.killHard()  // leaves the WAL as it is: the commits of versions 2...6 live only there
            try sandbox.publish("not a document")  // so no restart below fetches anything new

            let wal = sandbox.databasePath + "-wal"
            let walSize = try #require(FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int)
            let pristine = sandbox.root.appendingPathComponent("pristine").path
            try FileManager.default.createDirectory(atPath: pristine, withIntermediateDirectories: true)
            for suffix in ["", "-wal"] {
                try FileManager.default.copyItem(
                    atPath: sandbox.databasePath + suffix, toPath: pristine + "/state.db" + suffix)
            }

            var random = SplitMix64(seed: 7)
            let cuts = Set(
                [0, 1, 31, 32, 33, walSize / 2, walSize - 1, walSize]
                    + (0..<12).map { _ in Int(random.next() % UInt64(walSize)) }
            ).sorted()
            var versions: [Int] = []
            for cut in cuts {
                for suffix in ["", "-wal", "-shm"] { _ = unlink(sandbox.databasePath + suffix) }
                for suffix in ["", "-wal"] {
                    try FileManager.default.copyItem(
                        atPath: pristine + "/state.db" + suffix, toPath: sandbox.databasePath + suffix)
                }
                #expect(truncate(wal, off_t(cut)) == 0)

                let restarted = try sandbox.startDaemon()
                let value = try sandbox.cli("get", "key_0")
                restarted.killHard()
                let state = try StateSnapshot(path: sandbox.databasePath)
                #expect(state.integrity == "ok", "cut at \(cut)")
                #expect(StateSnapshot.isWhole(state.active, version: state.activeVersion, keys: keys), "cut at \(cut)")
                let version = Int(state.activeVersion ?? "0") ?? 0
                #expect(version >= 1, "cut at \(cut): the checkpointed snapshot survives")
                #expect(value.stdout == "v\(version)\n", "cut at \(cut): \(value.stdout)\(value.stderr)")
                #expect(version >= versions.last ?? 0, "cut at \(cut): \(version) after \(versions)")
                versions.append(version)
            }
            #expect(versions.first == 1 && versions.last == 6, "\(zip(cuts, versions).map { "\($0):v\($1)" })")
        }
    }
}
