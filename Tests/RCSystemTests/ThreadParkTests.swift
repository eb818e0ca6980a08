import Glibc
import RCSystem
import Synchronization
import Testing

/// The park of detached threads, each test on a park of its own (tests run in parallel, and the
/// shared one serves them all). A thread is named by its kernel id; whether it ended is seen in
/// /proc/self/task, which lists only live threads.
@Suite struct ThreadParkTests {
    /// What bodies report back: the id of the thread each ran on, in the order they finished, and a
    /// way to wait for them.
    final class Record: @unchecked Sendable {  // the semaphore is for threads; the rest is in mutexes
        private let ids = Mutex<[Int32]>([])
        private let done = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
        private let awaited = Mutex(0)

        init() { sem_init(done, 0, 0) }

        deinit {
            sem_destroy(done)
            done.deallocate()
        }

        /// Called by a body on its thread.
        func ran() {
            ids.withLock { $0.append(ThreadParkTests.threadID()) }
            sem_post(done)
        }

        /// The thread ids once `count` bodies in all have finished, waiting for them.
        func wait(_ count: Int) -> [Int32] {
            while awaited.withLock({ $0 }) < count {
                _ = Posix.retrying { sem_wait(done) }
                awaited.withLock { $0 += 1 }
            }
            return ids.withLock { $0 }
        }
    }

    /// A gate bodies block on until the test opens it.
    final class Gate: @unchecked Sendable {  // a semaphore, made for threads
        private let semaphore = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)

        init() { sem_init(semaphore, 0, 0) }

        deinit {
            sem_destroy(semaphore)
            semaphore.deallocate()
        }

        func pass() { _ = Posix.retrying { sem_wait(semaphore) } }
        func open(_ count: Int) { for _ in 0..<count { sem_post(semaphore) } }
    }

    /// Whether `condition` holds within `seconds`, checked every millisecond: for what only a park's
    /// own threads do after a body returns (park, time out, end).
    func eventually(_ seconds: Double = 10, _ condition: () -> Bool) -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1_000))
        while ContinuousClock.now < deadline {
            if condition() { return true }
            usleep(1_000)
        }
        return condition()
    }

    /// The kernel's id of the calling thread, from /proc/thread-self (`PID/task/TID`): a pthread_t is
    /// reused with the stack of an ended thread, and gettid(2) is not in the Glibc module.
    static func threadID() -> Int32 {
        var target = [CChar](repeating: 0, count: 64)
        let count = readlink("/proc/thread-self", &target, target.count - 1)
        guard count > 0 else { return -1 }
        let text = String(decoding: target[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return Int32(text.split(separator: "/").last ?? "") ?? -1
    }

    func alive(_ tid: Int32) -> Bool { access("/proc/self/task/\(tid)", F_OK) == 0 }

    static let stack = 256 * 1024

    @Test func aThreadThatFinishedABodyRunsTheNextOne() throws {
        let park = ThreadPark(capacity: 2, idleTimeout: .seconds(30))
        let record = Record()
        try #require(park.start(stackSize: Self.stack) { record.ran() })
        _ = record.wait(1)
        #expect(eventually { park.parkedCount == 1 })
        try #require(park.start(stackSize: Self.stack) { record.ran() })
        let ids = record.wait(2)
        #expect(ids[0] == ids[1])
        #expect(ids[0] != Self.threadID())
        #expect(eventually { park.parkedCount == 1 })
    }

    @Test func aParkedThreadEndsWhenNoBodyComesInTime() throws {
        let park = ThreadPark(capacity: 2, idleTimeout: .milliseconds(50))
        let record = Record()
        try #require(park.start(stackSize: Self.stack) { record.ran() })
        let tid = record.wait(1)[0]
        #expect(eventually { !alive(tid) })
        #expect(park.parkedCount == 0)
        // The next body gets a new thread.
        try #require(park.start(stackSize: Self.stack) { record.ran() })
        #expect(record.wait(2)[1] != tid)
    }

    @Test func noMoreThanCapacityThreadsPark() throws {
        let park = ThreadPark(capacity: 2, idleTimeout: .seconds(30))
        let record = Record()
        let gate = Gate()
        // Three bodies at once: three threads, since each holds its thread until the gate opens.
        for _ in 0..<3 {
            try #require(
                park.start(stackSize: Self.stack) {
                    gate.pass()
                    record.ran()
                })
        }
        gate.open(3)
        let ids = record.wait(3)
        #expect(Set(ids).count == 3)
        // Two park; the third found no room and ended.
        #expect(eventually { ids.filter(alive).count == 2 })
        #expect(park.parkedCount == 2)
    }

    @Test func aBodyStartedWhileEveryThreadIsBusyGetsANewThread() throws {
        let park = ThreadPark(capacity: 2, idleTimeout: .seconds(30))
        let record = Record()
        let gate = Gate()
        try #require(park.start(stackSize: Self.stack) { record.ran() })
        let first = record.wait(1)[0]
        #expect(eventually { park.parkedCount == 1 })
        // The parked thread takes this one and holds it until the gate opens...
        try #require(
            park.start(stackSize: Self.stack) {
                gate.pass()
                record.ran()
            })
        #expect(eventually { park.parkedCount == 0 })
        // ...so this one runs, and finishes, on a thread of its own while that one waits.
        try #require(park.start(stackSize: Self.stack) { record.ran() })
        let second = record.wait(2)[1]
        #expect(second != first)
        gate.open(1)
        #expect(record.wait(3)[2] == first)
    }

    @Test func onlyAThreadOfTheSameStackSizeIsReused() throws {
        let park = ThreadPark(capacity: 2, idleTimeout: .seconds(30))
        let record = Record()
        try #require(park.start(stackSize: Self.stack) { record.ran() })
        _ = record.wait(1)
        #expect(eventually { park.parkedCount == 1 })
        try #require(park.start(stackSize: 2 * Self.stack) { record.ran() })
        let ids = record.wait(2)
        #expect(ids[0] != ids[1])
        // Both park now, and each size goes back to its own thread.
        #expect(eventually { park.parkedCount == 2 })
        try #require(park.start(stackSize: Self.stack) { record.ran() })
        #expect(record.wait(3)[2] == ids[0])
        try #require(park.start(stackSize: 2 * Self.stack) { record.ran() })
        #expect(record.wait(4)[3] == ids[1])
    }

    @Test func aParkedThreadKeepsNothingOfTheBodyItRan() throws {
        final class Captured: Sendable {}
        let park = ThreadPark(capacity: 2, idleTimeout: .seconds(30))
        let record = Record()
        weak var released: Captured?
        do {
            let captured = Captured()
            released = captured
            try #require(
                park.start(stackSize: Self.stack) {
                    withExtendedLifetime(captured) { record.ran() }
                })
        }
        _ = record.wait(1)
        #expect(eventually { park.parkedCount == 1 })
        #expect(released == nil)
    }

    @Test func startFailsWhenNoThreadCanBeCreated() {
        let park = ThreadPark(capacity: 2, idleTimeout: .seconds(30))
        // A stack larger than the address space: pthread_create cannot map it.
        #expect(!park.start(stackSize: 1 << 48) {})
        #expect(park.parkedCount == 0)
    }
}
