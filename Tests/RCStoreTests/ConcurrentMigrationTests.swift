import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import RCStore

/// Several writers opening one new state database at once (the daemon starting while
/// `rcagent mark-stale` runs): each migrates or finds it migrated, none fails.
@Suite struct ConcurrentMigrationTests {
    @Test func writersOpeningANewDatabaseTogetherAllSucceed() throws {
        try TemporaryDirectory.with { (dir) throws in
            let failures = Mutex<[String]>([])
            for round in 0..<20 {
                let path = dir.file("state-\(round).db")
                DispatchQueue.concurrentPerform(iterations: 4) { _ in
                    do {
                        _ = try StateStore.openForWriting(path: path)
                    } catch {
                        failures.withLock { $0.append("round \(round): \(error)") }
                    }
                }
                let store = try StateStore.openForWriting(path: path)
                #expect(try store.status().deviceId?.isEmpty == false)
            }
            failures.withLock { #expect($0 == []) }
            // The temporary names the losers built under are gone, with their WAL files.
            let left = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains(".new-") }
            #expect(left == [])
        }
    }
}
