import FoundationEssentials
import RCCore
import RCSystem
import TestSupport
import Testing

@testable import RCStore

/// `StateStore` against real SQLite files, one temporary directory per test.
@Suite struct StateStoreTests {
    private let t0 = Timestamp(milliseconds: 1_700_000_000_000)
    private var t1: Timestamp { t0 + .seconds(60) }
    private var t2: Timestamp { t0 + .seconds(120) }
    private var t3: Timestamp { t0 + .seconds(180) }

    /// A fresh writable store in its own directory.
    private func withStore<T>(_ body: (StateStore, TemporaryDirectory) throws -> T) throws -> T {
        try TemporaryDirectory.with { (dir) throws in
            let store = try StateStore.openForWriting(path: dir.file("state.db"))
            return try body(store, dir)
        }
    }

    /// A second, raw connection to the same file, for what the public API cannot do.
    private func rawConnection(_ path: String) throws -> Database {
        try Database(path: path, mode: .readWrite)
    }

    private func remote(_ key: String, _ text: String) -> ConfigValue {
        ConfigValue(key: key, text: text, source: .remote)
    }
    private func fallback(_ key: String, _ text: String) -> ConfigValue {
        ConfigValue(key: key, text: text, source: .default)
    }

    private func kinds(_ store: StateStore) throws -> [String] { try store.events().map(\.kind) }

    // MARK: - Opening

    @Test func openForReadingReturnsNilWhenThereIsNoDatabase() throws {
        try TemporaryDirectory.with { (dir) throws in
            #expect(try StateStore.openForReading(path: dir.file("missing.db")) == nil)
            #expect(!pathExists(dir.file("missing.db")))
        }
    }

    @Test func anEmptyOrTruncatedFileIsDamageNotANewDatabase() throws {
        try TemporaryDirectory.with { (dir) throws in
            // SQLite would take an empty file for a new database and a 50-byte one for "schema 0":
            // both were a truncated state.db, silently replaced (issue 14).
            for (name, content, problem) in [
                ("empty.db", "", "is empty (0 bytes)"),
                ("short.db", "SQLite format 3\u{0}xx", "is truncated (18 bytes"),
                ("text.db", String(repeating: "not a database ", count: 10), "does not start with the SQLite header"),
            ] {
                try dir.write(name, content)
                for open in [
                    { _ = try StateStore.openForReading(path: dir.file(name)) },
                    {
                        _ = try StateStore.openForWriting(path: dir.file(name))
                    },
                ] {
                    let error = #expect(throws: StoreError.self) { try open() }
                    #expect(error?.isCorruption == true)
                    #expect(error?.description.contains(problem) == true, "\(String(describing: error))")
                }
                #expect(try FileBytes.read(dir.file(name)) == Array(content.utf8), "left as it was")
            }
        }
    }

    @Test func openForWritingCreatesAndMigratesTheSchema() throws {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            let store = try StateStore.openForWriting(path: path)
            #expect(store.path == path)
            #expect(pathExists(path))

            let raw = try rawConnection(path)
            #expect(try raw.query("PRAGMA user_version") { $0.integer(0) } == [Int64(Schema.currentVersion)])
            #expect(try raw.query("PRAGMA journal_mode") { $0.text(0) } == ["wal"])
            let tables = try raw.query(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
            ) {
                $0.text(0) ?? ""
            }
            #expect(
                tables == [
                    "activities", "defaults", "events", "fetch_state", "history", "meta", "rejected_versions",
                    "removed_activities", "snapshots", "stale", "trial",
                    "value_sets",
                ])
            #expect(try store.integrityProblems() == nil)
        }
    }

    /// `status()` reads in one read transaction: a commit by another connection between two of its
    /// statements does not show in the second one.
    @Test func readsInOneReadTransactionSeeOneCommit() throws {
        try TemporaryDirectory.with { (dir) throws in
            let store = try StateStore.openForWriting(path: dir.file("state.db"))
            let other = try StateStore.openForWriting(path: dir.file("state.db"))
            var committed = false
            let (before, after) = try store.db.reading { () throws(SQLiteError) in
                let before = try store.staleFlag()
                committed = (try? other.markStale(reason: "meanwhile", at: t0)) == true
                return (before, try store.staleFlag())
            }
            #expect(committed, "the other connection commits while the read transaction is open (WAL)")
            #expect(!before.isSet && after == before)
            #expect(try store.status().stale.reason == "meanwhile")
        }
    }

    @Test func freshStoreStatus() throws {
        try withStore { (store, _) throws in
            let status = try store.status()
            #expect(status.deviceId.map(DeviceID.isValid) == true)
            #expect(status.stale == .clear)
            #expect(status.active == SnapshotInfo(templateVersion: nil, etag: nil, at: nil, keys: 0))
            #expect(status.fetched == SnapshotInfo(templateVersion: nil, etag: nil, at: nil, keys: 0))
            #expect(status.pending == false)
            #expect(status.lastAttempt == nil)
            #expect(status.lastSuccess == nil)
            #expect(status.lastStatus == nil)
            #expect(status.lastError == nil)
            #expect(status.throttledUntil == nil)
            #expect(status.backoffStep == 0)
            #expect(status.nextFetchAt == nil)
            #expect(try store.events().isEmpty)
            #expect(try store.allValues().isEmpty)
            #expect(try store.value(forKey: "anything") == nil)
        }
    }

    @Test func deviceIdIsStableAcrossReopen() throws {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            let first = try #require(try StateStore.openForWriting(path: path).status().deviceId)
            #expect(DeviceID.isValid(first))
            #expect(try StateStore.openForWriting(path: path).status().deviceId == first)
            let reader = try #require(try StateStore.openForReading(path: path))
            #expect(try reader.status().deviceId == first)
            // Another database gets another id.
            #expect(try StateStore.openForWriting(path: dir.file("other.db")).status().deviceId != first)
        }
    }

    @Test func garbageFileIsReportedAsCorruption() throws {
        try TemporaryDirectory.with { (dir) throws in
            var generator = SplitMix64(seed: 0x5eed)
            let garbage = (0..<8_192).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let path = try dir.write("state.db", bytes: garbage)

            let readError = #expect(throws: StoreError.self) { try StateStore.openForReading(path: path) }
            #expect(readError?.isCorruption == true)
            if case .sqlite(let sqlite)? = readError {
                #expect(sqlite.code & 0xff == 26)  // SQLITE_NOTADB
                #expect(sqlite.isCorruption)
            } else {
                Issue.record("expected an SQLite error, got \(String(describing: readError))")
            }

            let writeError = #expect(throws: StoreError.self) { try StateStore.openForWriting(path: path) }
            #expect(writeError?.isCorruption == true)
            // Neither open changed the file: it can still be moved aside as it was.
            #expect(try dir.read("state.db") == garbage)
        }
    }

    @Test func truncatedDatabaseIsReportedAsCorruption() throws {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            do {
                let store = try StateStore.openForWriting(path: path)
                try store.replaceDefaults(
                    Dictionary(
                        uniqueKeysWithValues: (0..<2_000).map { ("key\($0)", String(repeating: "v", count: 100)) }))
            }
            // Keep only the first page: the header survives, the tables' pages are gone. The WAL
            // goes too (it still holds every page after a clean close, so SQLite would read those).
            let bytes = try dir.read("state.db")
            #expect(bytes.count > 8_192)
            try dir.write("state.db", bytes: Array(bytes.prefix(4_096)))
            try FileManager.default.removeItem(atPath: path + "-wal")
            try FileManager.default.removeItem(atPath: path + "-shm")

            let error = #expect(throws: StoreError.self) { try StateStore.openForReading(path: path) }
            #expect(error?.isCorruption == true)
        }
    }

    @Test func newerSchemaIsRefused() throws {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            _ = try StateStore.openForWriting(path: path)
            try rawConnection(path).execute("PRAGMA user_version = 99")

            let readError = #expect(throws: StoreError.self) { try StateStore.openForReading(path: path) }
            expectSchemaTooNew(readError, path: path)
            let writeError = #expect(throws: StoreError.self) { try StateStore.openForWriting(path: path) }
            expectSchemaTooNew(writeError, path: path)
            // The refusal left the version alone.
            #expect(try rawConnection(path).query("PRAGMA user_version") { $0.integer(0) } == [99])
        }
    }

    private func expectSchemaTooNew(
        _ error: StoreError?, path: String, sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) {
        guard case .schemaTooNew(let found, let supported, let errorPath)? = error else {
            Issue.record("expected schemaTooNew, got \(String(describing: error))", sourceLocation: sourceLocation)
            return
        }
        #expect(found == 99, sourceLocation: sourceLocation)
        #expect(supported == Schema.currentVersion, sourceLocation: sourceLocation)
        #expect(errorPath == path, sourceLocation: sourceLocation)
        #expect(error?.isCorruption == false, sourceLocation: sourceLocation)
        #expect(
            error?.description
                == "\(path): database schema version 99 is newer than this rcagent supports (\(Schema.currentVersion))",
            sourceLocation: sourceLocation)
    }

    @Test func readerCannotWrite() throws {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            _ = try StateStore.openForWriting(path: path)
            let reader = try #require(try StateStore.openForReading(path: path))
            #expect(throws: StoreError.self) { try reader.markStale(reason: "x", at: t0) }
            #expect(try reader.status().stale == .clear)
        }
    }

    @Test func readerSeesTheWritersCommits() throws {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            let writer = try StateStore.openForWriting(path: path)
            let reader = try #require(try StateStore.openForReading(path: path))
            #expect(try reader.value(forKey: "k") == nil)
            try writer.replaceDefaults(["k": "v"])
            try writer.markStale(reason: "ping", at: t0)
            #expect(try reader.value(forKey: "k") == fallback("k", "v"))
            #expect(try reader.status().stale == StaleFlag(isSet: true, reason: "ping", since: t0))
        }
    }

    // MARK: - Values

    @Test func lookupPrefersActiveOverDefaults() throws {
        try withStore { (store, _) throws in
            try store.replaceDefaults(["shared": "default", "onlyDefault": "d"])
            #expect(try store.value(forKey: "shared") == fallback("shared", "default"))

            let values = ["shared": "remote", "onlyRemote": "r", "emptyRemote": ""]
            try store.recordFetch(
                .update(values: RemoteValues(values), templateVersion: "1", etag: nil), at: t0, activate: true)
            #expect(try store.value(forKey: "shared") == remote("shared", "remote"))
            #expect(try store.value(forKey: "onlyRemote") == remote("onlyRemote", "r"))
            #expect(try store.value(forKey: "emptyRemote") == remote("emptyRemote", ""))
            #expect(try store.value(forKey: "onlyDefault") == fallback("onlyDefault", "d"))
            #expect(try store.value(forKey: "missing") == nil)
            #expect(try store.value(forKey: "SHARED") == nil)
        }
    }

    @Test func valuesKeepTheirTextExactly() throws {
        try withStore { (store, _) throws in
            let tricky = [
                "unicode": "café 😀", "spaces": "  a  b  ", "newline": "a\nb", "json": #"{"a":[1,"x"]}"#,
                "quote": "it's \"x\"", "": "empty key", "nul\u{0}inside": "a\u{0}b", "nul": "other", "a": "",
            ]
            try store.replaceDefaults(tricky)
            for (key, text) in tricky {
                #expect(try store.value(forKey: key) == fallback(key, text))
            }
        }
    }

    @Test func allValuesIsTheUnionWithSourcesSortedByKey() throws {
        try withStore { (store, _) throws in
            try store.replaceDefaults(["app.a": "1", "app.b": "2", "other": "3", "app%x": "literal", "app_y": "u"])
            try store.recordFetch(
                .update(values: ["app.b": "20", "app.c": "30", "zed": "9"], templateVersion: "1", etag: nil), at: t0,
                activate: true)

            #expect(
                try store.allValues()
                    == [
                        fallback("app%x", "literal"),
                        remote("app.b", "20"),
                        remote("app.c", "30"),
                        fallback("app.a", "1"),
                        fallback("app_y", "u"),
                        fallback("other", "3"),
                        remote("zed", "9"),
                    ].sorted { $0.key < $1.key })
            #expect(
                try store.allValues(prefix: "app.") == [
                    fallback("app.a", "1"), remote("app.b", "20"), remote("app.c", "30"),
                ])
            // The prefix is literal text, not a LIKE pattern.
            #expect(try store.allValues(prefix: "app%") == [fallback("app%x", "literal")])
            #expect(try store.allValues(prefix: "app_") == [fallback("app_y", "u")])
            #expect(try store.allValues(prefix: "zed") == [remote("zed", "9")])
            #expect(try store.allValues(prefix: "nothing") == [])
        }
    }

    @Test func allValuesIsSortedEvenWhenSourcesInterleave() throws {
        try withStore { (store, _) throws in
            try store.replaceDefaults(["b": "d", "d": "d"])
            try store.recordFetch(
                .update(values: ["a": "r", "c": "r", "e": "r"], templateVersion: nil, etag: nil), at: t0, activate: true
            )
            #expect(try store.allValues().map(\.key) == ["a", "b", "c", "d", "e"])
        }
    }

    @Test func replaceDefaultsReplacesTheWholeMap() throws {
        try withStore { (store, _) throws in
            try store.replaceDefaults(["a": "1", "b": "2"])
            try store.replaceDefaults(["b": "new", "c": "3"])
            #expect(try store.allValues() == [fallback("b", "new"), fallback("c", "3")])
            #expect(try store.value(forKey: "a") == nil)
            try store.replaceDefaults([:])
            #expect(try store.allValues().isEmpty)
        }
    }

    // MARK: - Stale flag

    @Test func markStaleKeepsTheFirstTimeAndPersists() throws {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            do {
                let store = try StateStore.openForWriting(path: path)
                #expect(try store.markStale(reason: "push CONFIG_STATE", at: t0) == true)
                #expect(try store.markStale(reason: "rcagent mark-stale", at: t1) == false)
                // The first reason and time stay: status says how long the config has really been stale.
                #expect(try store.status().stale == StaleFlag(isSet: true, reason: "push CONFIG_STATE", since: t0))
                // Only the transition is an event.
                let events = try store.events()
                #expect(events.map(\.kind) == ["stale-set"])
                #expect(events.first?.at == t0)
                #expect(events.first?.detail == .object([("reason", .string("push CONFIG_STATE"))]))
            }
            let reopened = try StateStore.openForWriting(path: path)
            #expect(try reopened.status().stale == StaleFlag(isSet: true, reason: "push CONFIG_STATE", since: t0))
            #expect(try reopened.markStale(reason: nil, at: t2) == false)
            let reader = try #require(try StateStore.openForReading(path: path))
            #expect(try reader.status().stale == StaleFlag(isSet: true, reason: "push CONFIG_STATE", since: t0))
        }
    }

    @Test func markStaleWithoutReason() throws {
        try withStore { (store, _) throws in
            #expect(try store.markStale(reason: nil, at: t0))
            #expect(try store.status().stale == StaleFlag(isSet: true, reason: nil, since: t0))
            #expect(try store.events().first?.detail == .object([("reason", .null)]))
        }
    }

    // MARK: - Fetch outcomes

    @Test func updateWithActivationActivatesAndClearsStaleInOneCall() throws {
        try withStore { (store, _) throws in
            try store.replaceDefaults(["a": "default"])
            try store.markStale(reason: "push", at: t0)

            let activation = try store.recordFetch(
                .update(values: ["a": "1", "b": "2"], templateVersion: "7", etag: "\"etag-7\""), at: t1, activate: true)
            #expect(activation?.changedKeys == ["a", "b"] && activation?.templateVersion == "7")

            let status = try store.status()
            #expect(status.stale == .clear)
            #expect(status.active == SnapshotInfo(templateVersion: "7", etag: "\"etag-7\"", at: t1, keys: 2))
            #expect(status.fetched == SnapshotInfo(templateVersion: "7", etag: "\"etag-7\"", at: t1, keys: 2))
            #expect(status.pending == false)
            #expect(status.lastAttempt == t1)
            #expect(status.lastSuccess == t1)
            #expect(status.lastStatus == .success)
            #expect(status.lastError == nil)
            #expect(try store.value(forKey: "a") == remote("a", "1"))

            let events = try store.events()
            #expect(events.map(\.kind) == ["stale-set", "fetched", "activated", "stale-cleared"])
            #expect(events.dropFirst().allSatisfy { $0.at == t1 })
            #expect(events[1].detail == .object([("keys", .integer(2)), ("templateVersion", .string("7"))]))
            #expect(
                events[2].detail
                    == .object([
                        ("changedKeys", .array([.string("a"), .string("b")])), ("templateVersion", .string("7")),
                    ]))
            #expect(events[3].detail == .object([]))
            #expect(events.map(\.id) == events.map(\.id).sorted())
        }
    }

    @Test func activationReportsAddedRemovedAndChangedKeysOnly() throws {
        try withStore { (store, _) throws in
            try store.recordFetch(
                .update(
                    values: ["same": "1", "changed": "old", "removed": "x", "emptied": "e"], templateVersion: "1",
                    etag: nil), at: t0, activate: true)
            let activation = try store.recordFetch(
                .update(
                    values: ["same": "1", "changed": "new", "added": "y", "emptied": ""], templateVersion: "2",
                    etag: nil), at: t1,
                activate: true)
            #expect(
                activation?.changedKeys == ["added", "changed", "emptied", "removed"]
                    && activation?.templateVersion == "2")
            #expect(
                try store.allValues() == [
                    remote("added", "y"), remote("changed", "new"), remote("emptied", ""), remote("same", "1"),
                ])

            // The same values again: an activation with nothing changed.
            let again = try store.recordFetch(
                .update(
                    values: ["same": "1", "changed": "new", "added": "y", "emptied": ""], templateVersion: "3",
                    etag: nil), at: t2,
                activate: true)
            #expect(again?.changedKeys == [] && again?.templateVersion == "3")
            #expect(try store.status().active.templateVersion == "3")
        }
    }

    /// The hooks' "old" and "new" come from the activation itself: values as `get` sees them, a
    /// removed remote key falling back to its default.
    @Test func activationCarriesEachKeysValueBeforeAndAfter() throws {
        try withStore { (store, _) throws in
            try store.replaceDefaults(["removed": "fallback", "added": "was-default"])
            try store.recordFetch(
                .update(values: ["changed": "old", "removed": "x", "gone": "g"], templateVersion: "1", etag: nil),
                at: t0, activate: true)
            let activation = try store.recordFetch(
                .update(values: ["changed": "new", "added": "y"], templateVersion: "2", etag: nil), at: t1,
                activate: true, withValues: true)
            #expect(
                activation?.changes == [
                    KeyChange(key: "added", old: "was-default", new: "y", source: .remote),
                    KeyChange(key: "changed", old: "old", new: "new", source: .remote),
                    KeyChange(key: "gone", old: "g", new: nil, source: nil),
                    KeyChange(key: "removed", old: "x", new: "fallback", source: .default),
                ])
            // What the writes logged is handed out once, without reading the log back.
            let kinds = store.takeCommittedEvents().map(\.kind)
            #expect(kinds == ["fetched", "activated", "fetched", "activated"])
            #expect(store.takeCommittedEvents().isEmpty)
            #expect(try store.events().suffix(4).map(\.kind) == kinds)
        }
    }

    @Test func emptyUpdateRemovesEveryRemoteValue() throws {
        try withStore { (store, _) throws in
            try store.replaceDefaults(["a": "default"])
            try store.recordFetch(
                .update(values: ["a": "1", "b": "2"], templateVersion: "1", etag: nil), at: t0, activate: true)
            let activation = try store.recordFetch(
                .update(values: [:], templateVersion: nil, etag: nil), at: t1, activate: true)
            #expect(activation?.changedKeys == ["a", "b"] && activation?.templateVersion == nil)
            #expect(try store.allValues() == [fallback("a", "default")])
            #expect(try store.status().active == SnapshotInfo(templateVersion: nil, etag: nil, at: t1, keys: 0))
        }
    }

    @Test func updateWithoutActivationStaysPendingUntilActivate() throws {
        try withStore { (store, _) throws in
            try store.replaceDefaults(["a": "default"])
            try store.recordFetch(.update(values: ["a": "1"], templateVersion: "1", etag: nil), at: t0, activate: true)
            try store.markStale(reason: nil, at: t0)

            let none = try store.recordFetch(
                .update(values: ["a": "2", "b": "new"], templateVersion: "2", etag: "e2"), at: t1, activate: false)
            #expect(none == nil)
            var status = try store.status()
            #expect(status.pending)
            #expect(status.stale == .clear)
            #expect(status.fetched == SnapshotInfo(templateVersion: "2", etag: "e2", at: t1, keys: 2))
            #expect(status.active == SnapshotInfo(templateVersion: "1", etag: nil, at: t0, keys: 1))
            #expect(try store.value(forKey: "a") == remote("a", "1"))
            #expect(try store.value(forKey: "b") == nil)
            #expect(try kinds(store).suffix(2) == ["fetched", "stale-cleared"])

            let activation = try store.activate(at: t2)
            #expect(activation?.changedKeys == ["a", "b"] && activation?.templateVersion == "2")
            status = try store.status()
            #expect(status.pending == false)
            #expect(status.active == SnapshotInfo(templateVersion: "2", etag: "e2", at: t2, keys: 2))
            #expect(try store.value(forKey: "a") == remote("a", "2"))
            #expect(try store.value(forKey: "b") == remote("b", "new"))
            #expect(try kinds(store).last == "activated")

            // Nothing is pending any more.
            let eventCount = try store.events().count
            #expect(try store.activate(at: t3) == nil)
            #expect(try store.events().count == eventCount)
            #expect(try store.status().active.at == t2)
        }
    }

    @Test func activateWithNothingEverFetchedIsNil() throws {
        try withStore { (store, _) throws in
            #expect(try store.activate(at: t0) == nil)
            #expect(try store.events().isEmpty)
        }
    }

    @Test func pendingSnapshotSurvivesReopen() throws {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            do {
                let store = try StateStore.openForWriting(path: path)
                try store.recordFetch(
                    .update(values: ["k": "v"], templateVersion: "5", etag: nil), at: t0, activate: false)
            }
            let store = try StateStore.openForWriting(path: path)
            #expect(try store.status().pending)
            let activation = try store.activate(at: t1)
            #expect(activation?.changedKeys == ["k"] && activation?.templateVersion == "5")
        }
    }

    @Test func noChangeClearsStaleAndBackoffAndRecordsStatus() throws {
        try withStore { (store, _) throws in
            try store.recordFetch(.update(values: ["k": "v"], templateVersion: "4", etag: "e"), at: t0, activate: true)
            try store.recordFetch(
                .failure(error: "timeout", backoffStep: 3, nextAttempt: t2, throttledUntil: t3), at: t1, activate: true)
            try store.markStale(reason: "push", at: t1)
            let before = try store.events().count

            #expect(try store.recordFetch(.noChange, at: t2, activate: true) == nil)
            let status = try store.status()
            #expect(status.stale == .clear)
            #expect(status.lastStatus == .noChange)
            #expect(status.lastAttempt == t2)
            #expect(status.lastSuccess == t2)
            #expect(status.lastError == nil)
            #expect(status.backoffStep == 0)
            #expect(status.nextFetchAt == nil)
            #expect(status.throttledUntil == nil)
            // The snapshots are untouched.
            #expect(status.active == SnapshotInfo(templateVersion: "4", etag: "e", at: t0, keys: 1))
            #expect(try store.value(forKey: "k") == remote("k", "v"))
            let events = try store.events()
            #expect(events.dropFirst(before).map(\.kind) == ["stale-cleared"])
            #expect(events.last?.at == t2)

            // Without a stale flag, no-change adds no event.
            try store.recordFetch(.noChange, at: t3, activate: false)
            #expect(try store.events().count == events.count)
            #expect(try store.status().lastSuccess == t3)
        }
    }

    @Test func failureKeepsStaleAndRecordsBackoff() throws {
        try TemporaryDirectory.with { (dir) throws in
            let path = dir.file("state.db")
            do {
                let store = try StateStore.openForWriting(path: path)
                try store.recordFetch(
                    .update(values: ["k": "v"], templateVersion: "1", etag: nil), at: t0, activate: true)
                try store.markStale(reason: "push", at: t1)
                let result = try store.recordFetch(
                    .failure(
                        error: "HTTP 503: Service Unavailable", backoffStep: 2, nextAttempt: t3,
                        throttledUntil: t3 + .seconds(60)),
                    at: t2, activate: true)
                #expect(result == nil)
                let events = try store.events()
                #expect(events.last?.kind == "fetch-failed")
                #expect(events.last?.at == t2)
                #expect(events.last?.detail == .object([("error", .string("HTTP 503: Service Unavailable"))]))
            }
            // Backoff state is durable, so a reboot loop cannot hammer the server.
            let reader = try #require(try StateStore.openForReading(path: path))
            let status = try reader.status()
            #expect(status.stale == StaleFlag(isSet: true, reason: "push", since: t1))
            #expect(status.lastStatus == .throttled, "a failure that carries a server throttle reads as throttled")
            #expect(status.lastError == "HTTP 503: Service Unavailable")
            #expect(status.lastAttempt == t2)
            #expect(status.lastSuccess == t0)
            #expect(status.backoffStep == 2)
            #expect(status.nextFetchAt == t3)
            #expect(status.throttledUntil == t3 + .seconds(60))
            #expect(try reader.value(forKey: "k") == remote("k", "v"))
        }
    }

    @Test func failureWithoutTimesClearsThem() throws {
        try withStore { (store, _) throws in
            try store.recordFetch(
                .failure(error: "a", backoffStep: 1, nextAttempt: t1, throttledUntil: t1), at: t0, activate: false)
            try store.recordFetch(
                .failure(error: "b", backoffStep: 2, nextAttempt: nil, throttledUntil: nil), at: t1, activate: false)
            let status = try store.status()
            #expect(status.lastError == "b")
            #expect(status.backoffStep == 2)
            #expect(status.nextFetchAt == nil)
            #expect(status.throttledUntil == nil)
            #expect(status.lastSuccess == nil)
            #expect(try kinds(store) == ["fetch-failed", "fetch-failed"])
        }
    }

    @Test func throttledRecordsUntilWhen() throws {
        try withStore { (store, _) throws in
            try store.markStale(reason: nil, at: t0)
            #expect(try store.recordFetch(.throttled(until: t3), at: t1, activate: true) == nil)
            let status = try store.status()
            #expect(status.lastStatus == .throttled)
            #expect(status.throttledUntil == t3)
            #expect(status.nextFetchAt == t3)
            #expect(status.stale.isSet)
            #expect(status.lastSuccess == nil)
        }
    }

    // MARK: - Events

    @Test func eventsAfterAnIdAndLimit() throws {
        try withStore { (store, _) throws in
            for i in 0..<5 {
                try store.recordEvent(
                    .fetchFailed, detail: .object([("i", .integer(Int64(i)))]), at: t0 + .seconds(Int64(i)))
            }
            let all = try store.events()
            #expect(all.map(\.detail) == (0..<5).map { .object([("i", .integer(Int64($0)))]) })
            #expect(all.map(\.at) == (0..<5).map { t0 + .seconds(Int64($0)) })
            #expect(try store.events(after: all[2].id).map(\.id) == Array(all[3...].map(\.id)))
            #expect(try store.events(after: all[0].id, limit: 2).map(\.id) == [all[1].id, all[2].id])
            #expect(try store.events(after: all[4].id).isEmpty)
        }
    }

    @Test func eventLogIsBounded() throws {
        try withStore { (store, _) throws in
            // Fill past the limit in one transaction (a commit per event would mean 1,000 fsyncs).
            let raw = try rawConnection(store.path)
            let extra: Int64 = 100
            try raw.transaction {
                for i in 1...(StateStore.eventLimit + extra) {
                    try raw.run("INSERT INTO events (at, kind, detail) VALUES (?, 'filler', '{}')", [.integer(i)])
                }
            }
            #expect(try store.events(limit: 10_000).count == Int(StateStore.eventLimit + extra))

            try store.recordEvent(.fetchFailed, detail: .object([]), at: t0)
            let events = try store.events(limit: 10_000)
            #expect(events.count == Int(StateStore.eventLimit))
            #expect(events.first?.id == extra + 2)
            #expect(events.last?.id == StateStore.eventLimit + extra + 1)
            #expect(events.last?.known == .fetchFailed)

            // Every later event keeps it at the limit.
            try store.markStale(reason: nil, at: t1)
            let after = try store.events(limit: 10_000)
            #expect(after.count == Int(StateStore.eventLimit))
            #expect(after.first?.id == extra + 3)
            #expect(after.last?.kind == "stale-set")
        }
    }

    // MARK: - Transactions

    struct Boom: Error, Equatable {}

    @Test func failedTransactionLeavesNothingBehind() throws {
        try withStore { (store, _) throws in
            let raw = try rawConnection(store.path)
            #expect(throws: Boom()) {
                try raw.transaction {
                    try raw.run("INSERT INTO defaults (key, value) VALUES ('ghost', 'boo')")
                    try raw.run("UPDATE stale SET is_set = 1")
                    throw Boom()
                }
            }
            #expect(try store.value(forKey: "ghost") == nil)
            #expect(try store.status().stale == .clear)
            #expect(try raw.query("SELECT count(*) FROM defaults") { $0.integer(0) } == [0])

            // The connection is usable afterwards, and a body that returns commits.
            let result = try raw.transaction {
                try raw.run("INSERT INTO defaults (key, value) VALUES ('real', 'yes')")
                return 42
            }
            #expect(result == 42)
            #expect(try store.value(forKey: "real") == fallback("real", "yes"))
        }
    }

    @Test func failedTransactionRethrowsTheFirstError() throws {
        try withStore { (store, _) throws in
            let raw = try rawConnection(store.path)
            let error = #expect(throws: SQLiteError.self) {
                try raw.transaction {
                    try raw.run("INSERT INTO defaults (key, value) VALUES ('a', '1')")
                    try raw.run("INSERT INTO no_such_table VALUES (1)")
                }
            }
            #expect(error?.message.contains("no_such_table") == true)
            #expect(error?.sql == "INSERT INTO no_such_table VALUES (1)")
            #expect(try store.value(forKey: "a") == nil)
        }
    }

    /// Makes the next write that touches `table` fail inside the store's own transaction.
    private func sabotage(_ table: String, in store: StateStore) throws {
        try rawConnection(store.path).execute(
            "CREATE TRIGGER sabotage BEFORE INSERT ON \(table) BEGIN SELECT RAISE(ABORT, 'sabotaged'); END")
    }

    @Test func replaceDefaultsIsAllOrNothing() throws {
        try withStore { (store, _) throws in
            try store.replaceDefaults(["old": "1"])
            try rawConnection(store.path).execute(
                """
                CREATE TRIGGER sabotage BEFORE INSERT ON defaults WHEN NEW.key = 'z'
                BEGIN SELECT RAISE(ABORT, 'sabotaged'); END
                """)
            let error = #expect(throws: StoreError.self) { try store.replaceDefaults(["a": "1", "b": "2", "z": "3"]) }
            #expect(error?.description.contains("sabotaged") == true)
            #expect(try store.allValues() == [fallback("old", "1")])
        }
    }

    @Test func failedActivationKeepsTheOldSnapshotAndTheStaleFlag() throws {
        try withStore { (store, _) throws in
            try store.recordFetch(
                .update(values: ["k": "old"], templateVersion: "1", etag: "e1"), at: t0, activate: true)
            try store.markStale(reason: "push", at: t1)
            let eventsBefore = try store.events()
            // The activation's write: the active snapshot naming the new value set.
            try rawConnection(store.path).execute(
                """
                CREATE TRIGGER sabotage BEFORE INSERT ON snapshots WHEN NEW.kind = 'active'
                BEGIN SELECT RAISE(ABORT, 'sabotaged'); END
                """)

            let error = #expect(throws: StoreError.self) {
                try store.recordFetch(
                    .update(values: ["k": "new"], templateVersion: "2", etag: "e2"), at: t2, activate: true)
            }
            #expect(error?.description.contains("sabotaged") == true)

            // The fetched values, the fetch status, the stale flag and the events all rolled back together.
            let status = try store.status()
            #expect(status.stale == StaleFlag(isSet: true, reason: "push", since: t1))
            #expect(status.active == SnapshotInfo(templateVersion: "1", etag: "e1", at: t0, keys: 1))
            #expect(status.fetched == SnapshotInfo(templateVersion: "1", etag: "e1", at: t0, keys: 1))
            #expect(status.pending == false)
            #expect(status.lastAttempt == t0)
            #expect(try store.value(forKey: "k") == remote("k", "old"))
            #expect(try store.events() == eventsBefore)
        }
    }

    @Test func failedMarkStaleLeavesTheFlagClear() throws {
        try withStore { (store, _) throws in
            try sabotage("events", in: store)
            #expect(throws: StoreError.self) { try store.markStale(reason: "push", at: t0) }
            #expect(try store.status().stale == .clear)
        }
    }

    @Test func integrityCheckIsCleanOnAGoodDatabase() throws {
        try withStore { (store, _) throws in
            #expect(try store.integrityProblems() == nil)
            try store.replaceDefaults(Dictionary(uniqueKeysWithValues: (0..<500).map { ("k\($0)", "v\($0)") }))
            try store.recordFetch(.update(values: ["a": "1"], templateVersion: "1", etag: nil), at: t0, activate: true)
            #expect(try store.integrityProblems() == nil)
        }
    }

    // MARK: - open(config:)

    @Test func openWithConfigCreatesTheStateDirectoryAndImportsDefaults() throws {
        try TemporaryDirectory.with { (dir) throws in
            var config = AgentConfig()
            config.stateDirectory = dir.file("var/lib/rcagent")
            config.defaults = try dir.write(
                "defaults.json", #"{"greeting": "hello", "count": 3, "flags": {"b": true, "a": false}}"#)

            let store = try StateStore.open(config: config)
            #expect(store.path == dir.file("var/lib/rcagent/state.db"))
            #expect(pathExists(dir.file("var/lib/rcagent/state.db")))
            #expect(
                try store.allValues() == [
                    fallback("count", "3"), fallback("flags", #"{"a":false,"b":true}"#), fallback("greeting", "hello"),
                ])
            #expect(try store.status().deviceId.map(DeviceID.isValid) == true)
        }
    }

    @Test func openWithConfigImportsDefaultsOnlyIntoANewDatabase() throws {
        try TemporaryDirectory.with { (dir) throws in
            var config = AgentConfig()
            config.stateDirectory = dir.file("state")
            config.defaults = try dir.write("defaults.json", #"{"a": "1"}"#)
            let deviceId = try StateStore.open(config: config).status().deviceId

            try dir.write("defaults.json", #"{"a": "2", "b": "3"}"#)
            let reopened = try StateStore.open(config: config)
            #expect(try reopened.allValues() == [fallback("a", "1")])
            #expect(try reopened.status().deviceId == deviceId)
        }
    }

    @Test func openWithConfigWithoutADefaultsFile() throws {
        try TemporaryDirectory.with { (dir) throws in
            var config = AgentConfig()
            config.stateDirectory = dir.file("state")
            config.defaults = dir.file("no-such-defaults.json")
            let store = try StateStore.open(config: config)
            #expect(try store.allValues().isEmpty)
        }
    }

    @Test func openWithConfigAndABadDefaultsFileFailsWithoutLeavingAnEmptyCache() throws {
        try TemporaryDirectory.with { (dir) throws in
            var config = AgentConfig()
            config.stateDirectory = dir.file("state")
            config.defaults = try dir.write("defaults.json", #"{"a": null}"#)

            #expect(throws: DocumentError(document: config.defaults, reason: "key \"a\": null is not a value")) {
                try StateStore.open(config: config)
            }
            // Readers must not find a database without the defaults...
            #expect(try StateStore.openForReading(path: config.databasePath) == nil)

            // ...and once the file is fixed, they are imported.
            try dir.write("defaults.json", #"{"a": "1"}"#)
            #expect(try StateStore.open(config: config).allValues() == [fallback("a", "1")])
        }
    }

    @Test func readDefaults() throws {
        try TemporaryDirectory.with { (dir) throws in
            #expect(try StateStore.readDefaults(path: dir.file("missing.json")) == nil)
            let path = try dir.write("d.json", #"{"x": 1.5}"#)
            #expect(try StateStore.readDefaults(path: path) == ["x": "1.5"])
            let bad = try dir.write("bad.json", "[]")
            #expect(throws: DocumentError(document: bad, reason: "expected a JSON object of key → value, got array")) {
                try StateStore.readDefaults(path: bad)
            }
        }
    }
}
