import RCCore
import TestSupport
import Testing

@testable import RCStore

/// Which keys an activation reports as changed: those whose value `get` returns (remote, else
/// default) differs, whichever table the key is in before and after.
@Suite struct ChangedKeysTests {
    private let t0 = Timestamp(milliseconds: 1_700_000_000_000)

    private func withStore<T>(_ body: (StateStore) throws -> T) throws -> T {
        try TemporaryDirectory.with { (dir) throws in
            try body(try StateStore.openForWriting(path: dir.file("state.db")))
        }
    }

    /// Every case at once: a key's value stays when it moves between remote and a default equal to
    /// it, in either direction; it changes when either side differs or the key appears or goes.
    @Test(arguments: [false, true])
    func aKeyChangesWhenTheValueGetReturnsChanges(withValues: Bool) throws {
        try withStore { store throws in
            try store.replaceDefaults(["to-default": "same", "from-default": "d", "to-other-default": "other"])
            try store.recordFetch(
                .update(
                    values: ["to-default": "same", "to-other-default": "x", "kept": "k", "gone": "g", "edited": "1"],
                    templateVersion: "1", etag: nil), at: t0, activate: true)
            let activation = try store.recordFetch(
                .update(
                    values: ["from-default": "d", "kept": "k", "edited": "2", "new": "n"], templateVersion: "2",
                    etag: nil), at: t0 + .seconds(1), activate: true, withValues: withValues)
            #expect(activation?.changedKeys == ["edited", "gone", "new", "to-other-default"])
            if withValues {
                #expect(
                    activation?.changes == [
                        KeyChange(key: "edited", old: "1", new: "2", source: .remote),
                        KeyChange(key: "gone", old: "g", new: nil, source: nil),
                        KeyChange(key: "new", old: nil, new: "n", source: .remote),
                        KeyChange(key: "to-other-default", old: "x", new: "other", source: .default),
                    ])
            }
        }
    }

    /// Keys come back in the order of their bytes, from both walks merged: remote keys and keys
    /// only the old snapshot had, interleaved.
    @Test func changedKeysAreInByteOrderAcrossBothWalks() throws {
        try withStore { store throws in
            try store.recordFetch(
                .update(values: ["b": "1", "d": "1", "\u{e9}": "1"], templateVersion: "1", etag: nil), at: t0,
                activate: true)
            let activation = try store.recordFetch(
                .update(values: ["a": "2", "c": "2", "e": "2", "Z": "2"], templateVersion: "2", etag: nil),
                at: t0 + .seconds(1), activate: true)
            #expect(activation?.changedKeys == ["Z", "a", "b", "c", "d", "e", "\u{e9}"])
        }
    }
    /// Keys and values are compared by their bytes, as SQLite and `get` see them: a key spelled
    /// with a combining accent is another key than the precomposed one (Swift's `==` says they are
    /// equal), and a value that changes only its spelling is a change.
    @Test func canonicallyEquivalentSpellingsAreDifferentKeysAndValues() throws {
        try withStore { store throws in
            try store.recordFetch(
                .update(values: ["caf\u{e9}": "1", "name": "Jos\u{e9}"], templateVersion: "1", etag: nil), at: t0,
                activate: true)
            let activation = try store.recordFetch(
                .update(values: ["cafe\u{301}": "1", "name": "Jose\u{301}"], templateVersion: "2", etag: nil),
                at: t0 + .seconds(1), activate: true, withValues: true)
            #expect(
                activation?.changedKeys.map { Array($0.utf8) } == [
                    Array("cafe\u{301}".utf8), Array("caf\u{e9}".utf8), Array("name".utf8),
                ])
            #expect(activation?.changes?.last?.new.map { Array($0.utf8) } == Array("Jose\u{301}".utf8))
        }
    }
}
