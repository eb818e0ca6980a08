import Glibc
import RCCore
import RCSystem
import TestSupport
import Testing

@testable import RCStore

/// The reader file (`StateStore+ReaderFile`): rewritten after each change readers see, swapped into
/// place so a reader on the old file keeps its view, and read without locks.
@Suite struct ReaderFileTests {
    private let t0 = Timestamp(milliseconds: 1_700_000_000_000)

    private func withStore<T>(_ body: (StateStore, TemporaryDirectory) throws -> T) throws -> T {
        try withReaderFileStore(body)
    }

    private func inode(_ path: String) -> ino_t? {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_ino : nil
    }

    private func mode(_ path: String) -> mode_t? {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_mode & 0o7777 : nil
    }

    private func update(_ store: StateStore, _ values: [String: String], version: String, at: Timestamp) throws {
        try store.recordFetch(
            .update(values: RemoteValues(values), templateVersion: version, etag: nil), at: at, activate: true)
    }

    /// Loading the same defaults again (every daemon start and reload) writes nothing: no commit, no
    /// new reader file. A value that is the same text in another spelling (NFD against NFC) is a
    /// change, stored as given; so are a changed key set and a changed value.
    @Test func theSameDefaultsAgainWriteNothingAndAnyOtherBytesAreWritten() throws {
        try withStore { store, dir in
            let reader = dir.file("reader.db")
            let composed = "caf\u{E9}"
            #expect(try store.replaceDefaults(["k": composed, "d": "x"]))
            let written = try #require(inode(reader))
            let version = try store.version()
            #expect(try store.replaceDefaults(["d": "x", "k": composed]) == false)
            #expect(try store.version() == version)
            #expect(inode(reader) == written)

            let decomposed = "cafe\u{301}"
            #expect(decomposed == composed)  // one text to Swift's ==, other bytes to SQLite and readers
            #expect(try store.replaceDefaults(["k": decomposed, "d": "x"]))
            #expect(inode(reader) != written)
            let stored = try #require(try StateStore.openReaderFile(path: reader)?.value(forKey: "k")?.text)
            #expect(Array(stored.utf8) == Array(decomposed.utf8))
            for other in [["k": decomposed], ["k": decomposed, "d": "y"], ["k": decomposed, "e": "x"], [:]] {
                #expect(try store.replaceDefaults(other), "\(other)")
                #expect(try store.allValues().count == other.count)
            }
        }
    }

    @Test func theReaderFileHoldsWhatReadersReadAfterEachCommit() throws {
        try withStore { store, dir in
            try store.replaceDefaults(["d": "default", "k": "fallback"])
            try update(store, ["k": "remote"], version: "7", at: t0)
            try store.markStale(reason: "pushed", at: t0)
            let reader = try #require(try StateStore.openReaderFile(path: dir.file("reader.db")))
            #expect(try reader.value(forKey: "k") == ConfigValue(key: "k", text: "remote", source: .remote))
            #expect(try reader.allValues() == (try store.allValues()))
            let status = try reader.status()
            let truth = try store.status()
            #expect(status.deviceId == truth.deviceId && status.deviceId != nil)
            #expect(status.stale == truth.stale && status.stale.isSet)
            #expect(status.active == truth.active && status.active.keys == 1)
            #expect(status.lastSuccess == truth.lastSuccess && status.lastStatus == .success)
            // Only what readers print: no notes, no event log, no fetched values.
            try store.setNote(.reportTopic, "x")
            let fresh = try #require(try StateStore.openReaderFile(path: dir.file("reader.db")))
            #expect(try fresh.note(.reportTopic) == nil)
            #expect(try fresh.events().isEmpty)
        }
    }

    @Test func aReaderOnTheOldFileKeepsItsWholeViewWhileTheFileIsReplaced() throws {
        try withStore { store, dir in
            let many = Dictionary(uniqueKeysWithValues: (0..<500).map { ("key\($0)", "one \($0)") })
            try update(store, many, version: "1", at: t0)
            let path = dir.file("reader.db")
            let before = inode(path)
            let old = try #require(try StateStore.openReaderFile(path: path))
            #expect(try old.value(forKey: "key7")?.text == "one 7")
            for round in 2...20 {
                try update(
                    store, Dictionary(uniqueKeysWithValues: (0..<500).map { ("key\($0)", "v\(round) \($0)") }),
                    version: "\(round)", at: t0 + .seconds(Int64(round)))
            }
            #expect(inode(path) != before, "the file is replaced by another, never rewritten in place")
            // The old view, whole and unchanged: every key, every value of round 1.
            let oldValues = try old.allValues()
            #expect(oldValues.count == 500 && oldValues.allSatisfy { $0.text.hasPrefix("one ") })
            #expect(try old.status().active.templateVersion == "1")
            let new = try #require(try StateStore.openReaderFile(path: path))
            #expect(try new.value(forKey: "key7")?.text == "v20 7")
            #expect(try new.status().active.templateVersion == "20")
        }
    }

    @Test func modesAndNoLeftoversAfterManyWrites() throws {
        try withStore { store, dir in
            for round in 0..<30 { try store.markStale(reason: "r\(round)", at: t0) }
            #expect(mode(dir.file("reader.db")) == 0o644, "everyone reads the reader file")
            #expect(mode(dir.file("state.db")) == 0o640, "the database is born private")
            #expect(mode(dir.file("state.db-wal")) == 0o640, "SQLite gives its WAL the database's mode")
            let names = FileBytes.directoryEntries(dir.path).filter { !$0.hasPrefix(".") }.sorted()
            #expect(names == ["reader.db", "state.db", "state.db-shm", "state.db-wal"])
        }
    }

    @Test func installPutsTheNewFileInPlaceAndLeavesNoOtherName() throws {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("reader.db")
            // No file in place yet: the first install is a plain rename.
            let first = try dir.write("reader.db.tmp-first1", "first")
            try StateStore.install(first, at: path)
            #expect(try FileBytes.read(path) == Array("first".utf8))
            // Over a file a reader holds: the reader keeps the old file, which no name reaches any more.
            let held = open(path, O_RDONLY)
            #expect(held >= 0)
            defer { close(held) }
            let second = try dir.write("reader.db.tmp-second", "second")
            try StateStore.install(second, at: path)
            #expect(try FileBytes.read(path) == Array("second".utf8))
            var info = stat()
            #expect(fstat(held, &info) == 0 && info.st_nlink == 0, "the old file's name is gone")
            var buffer = [UInt8](repeating: 0, count: 16)
            #expect(pread(held, &buffer, 16, 0) == 5 && Array(buffer.prefix(5)) == Array("first".utf8))
            #expect(FileBytes.directoryEntries(dir.path).sorted() == ["reader.db"])
        }
    }

    @Test func aWriterKilledMidBuildLeavesATemporaryTheNextOneRemoves() throws {
        try TemporaryDirectory.with { (dir) throws in
            let leftover = try dir.write("reader.db.tmp-AbC123", "half a database")
            let store = try StateStore.openForWriting(path: dir.file("state.db"))
            store.maintainReaderFile(at: dir.file("reader.db")) { Issue.record("\($0)") }
            #expect(!FileBytes.exists(leftover))
            #expect(try StateStore.openReaderFile(path: dir.file("reader.db")) != nil)
        }
    }

    @Test func aChangeReadersDoNotSeeKeepsTheFileButMarksItCurrent() throws {
        try withStore { store, dir in
            let path = dir.file("reader.db")
            let before = inode(path)
            #expect(StateStore.readerFileIsCurrent(path, database: dir.file("state.db")))
            // A sqlite3 edit by hand makes the database newer than the reader file (the file's time
            // set back: file times move in clock ticks, and this all runs within one)...
            let raw = try Database(path: dir.file("state.db"), mode: .readWrite)
            try raw.execute("UPDATE meta SET value = value WHERE key = 'device_id'")
            var earlier = [timespec(tv_sec: time(nil) - 10, tv_nsec: 0), timespec(tv_sec: time(nil) - 10, tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, path, &earlier, 0) == 0)
            #expect(!StateStore.readerFileIsCurrent(path, database: dir.file("state.db")))
            // ...and the writer's commits that readers cannot see (notes) only touch it: current again.
            try store.setNote(.realtimeFailures, "1")
            #expect(inode(path) == before)
            #expect(StateStore.readerFileIsCurrent(path, database: dir.file("state.db")))
        }
    }

    @Test func aFailedWriteIsReportedOnceAndTriedAgainByTheNextCommit() throws {
        try TemporaryDirectory.with { (dir) throws in
            let store = try StateStore.openForWriting(path: dir.file("state.db"))
            let path = dir.file("later/reader.db")  // a directory that does not exist yet
            var failures: [String] = []
            store.maintainReaderFile(at: path) { failures.append($0.description) }
            try store.markStale(reason: "one", at: t0)
            try store.setNote(.realtimeFailures, "1")
            #expect(failures.count == 1, "\(failures)")
            #expect(failures.first?.contains("later/reader.db.tmp-") == true, "\(failures)")
            try FileBytes.makeDirectories(dir.file("later"))
            try store.setNote(.realtimeFailures, "2")  // not a visible change, but the file is still owed
            let reader = try #require(try StateStore.openReaderFile(path: path))
            #expect(try reader.status().stale.reason == "one")
            #expect(failures.count == 1)
        }
    }

    @Test func anyPathIsOpenedAsItselfNotAsAURI() throws {
        try TemporaryDirectory.with { (dir) throws in
            try FileBytes.makeDirectories(dir.file("a?b#c%41"))
            let store = try StateStore.openForWriting(path: dir.file("a?b#c%41/state.db"))
            let path = dir.file("a?b#c%41/reader.db")
            store.maintainReaderFile(at: path) { Issue.record("\($0)") }
            try store.replaceDefaults(["k": "v"])
            #expect(try StateStore.openReaderFile(path: path)?.value(forKey: "k")?.text == "v")
            #expect(Database.immutableURI("/x?y#z%") == "file:///x%3Fy%23z%25?immutable=1")
            #expect(Database.immutableURI("//host/x") == "file:////host/x?immutable=1")
            #expect(Database.immutableURI("rel.db") == "file:rel.db?immutable=1")
        }
    }

    /// The file's bytes, whole.
    private func bytes(_ path: String) throws -> [UInt8] {
        try #require(try FileBytes.read(path, limit: 64 << 20))
    }

    private func contains(_ haystack: [UInt8], _ needle: String) -> Bool {
        let needle = Array(needle.utf8)
        guard haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains {
            haystack[$0..<($0 + needle.count)].elementsEqual(needle)
        }
    }

    @Test func rowsGoneFromTheStateAreGoneFromTheFileAndFromItsBytes() throws {
        try withStore { store, dir in
            let path = dir.file("reader.db")
            // Pages of them: the deleted ones stay free in the file (too few to start it again).
            var defaults = Dictionary(
                uniqueKeysWithValues: (0..<100).map { ("drop\($0)", "DROPPED-DEFAULT-9f3a \($0)") })
            defaults["keep"] = "kept value"
            try store.replaceDefaults(defaults)
            try update(store, ["old": "OLD-REMOTE-VALUE-7c1e", "same": "s"], version: "1", at: t0)
            let before = try bytes(path)
            #expect(contains(before, "DROPPED-DEFAULT-9f3a") && contains(before, "OLD-REMOTE-VALUE-7c1e"))
            try store.replaceDefaults(["keep": "kept value"])
            try update(store, ["new": "n", "same": "s"], version: "2", at: t0 + .seconds(1))
            let reader = try #require(try StateStore.openReaderFile(path: path))
            #expect(try reader.allValues() == (try store.allValues()))
            #expect(try reader.value(forKey: "drop7") == nil)
            #expect(try reader.value(forKey: "old") == nil)
            #expect(try reader.status().active.templateVersion == "2")
            // Neither the rows nor their bytes: deleted rows are zeroed, not left in free space.
            let written = try bytes(path)
            #expect(!contains(written, "DROPPED-DEFAULT-9f3a") && !contains(written, "OLD-REMOTE-VALUE-7c1e"))
        }
    }

    @Test func aBigStateFollowedByASmallOneGivesASmallFileAgain() throws {
        try withStore { store, dir in
            let path = dir.file("reader.db")
            try update(store, ["k": "v"], version: "1", at: t0)
            let small = try bytes(path).count
            let many = Dictionary(uniqueKeysWithValues: (0..<3_000).map { ("key\($0)", "value \($0) of the big one") })
            try update(store, many, version: "2", at: t0 + .seconds(1))
            let big = try bytes(path).count
            #expect(big > small + 100_000, "\(big) bytes for 3,000 keys, \(small) for one")
            try update(store, ["k": "w"], version: "3", at: t0 + .seconds(2))
            #expect(try bytes(path).count <= 2 * small, "the empty pages of the big state are not written again")
            let reader = try #require(try StateStore.openReaderFile(path: path))
            #expect(try reader.allValues() == (try store.allValues()))
            #expect(try reader.integrityProblems() == nil)
        }
    }

    @Test func theWriterClosedLastKeepsTheWALForReaders() throws {
        try TemporaryDirectory.with { (dir) throws in
            do {
                let store = try StateStore.openForWriting(path: dir.file("state.db"))
                store.maintainReaderFile(at: dir.file("reader.db")) { Issue.record("\($0)") }
                try store.markStale(reason: "one", at: t0)
            }
            // Both the writer's connection and the reader file's (which has the database attached)
            // are closed: SQLite deletes the WAL with the last one unless told to keep it.
            #expect(FileBytes.exists(dir.file("state.db-wal")) && FileBytes.exists(dir.file("state.db-shm")))
            let again = try #require(try StateStore.openForReading(path: dir.file("state.db")))
            #expect(try again.status().stale.reason == "one")
        }
    }

    @Test func aReaderFileTooBigToKeepInMemoryIsBuiltInPlace() throws {
        try withStore { store, dir in
            try update(store, ["k": "v"], version: "1", at: t0)
            #expect(store.readerStaging != nil, "a small state: kept, so the next write parses no schema")
            let long = String(repeating: "x", count: 500)
            let big = Dictionary(uniqueKeysWithValues: (0..<3_000).map { ("key\($0)", "\($0) \(long)") })
            try update(store, big, version: "2", at: t0 + .seconds(1))
            #expect(store.readerTooBig, "over \(StateStore.stagingLimit) bytes: built in place, not in memory")
            let reader = try #require(try StateStore.openReaderFile(path: dir.file("reader.db")))
            #expect(try reader.value(forKey: "key2999")?.text == "2999 \(long)")
            #expect(try reader.allValues() == (try store.allValues()))
            // The next one is built in place at once, and when small again it is kept again.
            try update(store, big.mapValues { $0 + "!" }, version: "3", at: t0 + .seconds(2))
            #expect(
                try StateStore.openReaderFile(path: dir.file("reader.db"))?.value(forKey: "key1")?.text == "1 \(long)!")
            for round in 4...5 {
                try update(store, ["k": "w\(round)"], version: "\(round)", at: t0 + .seconds(Int64(round)))
                #expect(
                    try StateStore.openReaderFile(path: dir.file("reader.db"))?.allValues() == (try store.allValues()))
            }
            #expect(!store.readerTooBig && store.readerStaging != nil)
        }
    }
}

/// A writable store in a new directory keeping `reader.db` beside it; a failure to write it is an
/// issue. (The reader file's suites.)
func withReaderFileStore<T>(_ body: (StateStore, TemporaryDirectory) throws -> T) throws -> T {
    try TemporaryDirectory.with { (dir) throws in
        let store = try StateStore.openForWriting(path: dir.file("state.db"))
        store.maintainReaderFile(at: dir.file("reader.db")) { Issue.record("reader file not written: \($0)") }
        return try body(store, dir)
    }
}
