import RCCore
import TestSupport
import Testing

@testable import RCStore

/// Which keys an activation reports as changed: those whose value `get` returns (remote, else
/// default) differs before and after, compared here with that rule applied by hand.
@Suite struct ChangedKeysRuleTests {
    private let t0 = Timestamp(milliseconds: 1_700_000_000_000)

    /// What `get` returns for `key` with `remote` active over `defaults`.
    private func seen(_ key: String, _ remote: [String: String], _ defaults: [String: String]) -> String? {
        remote[key] ?? defaults[key]
    }

    @Test func aChangeIsAChangeOfTheValueGetReturnsWhateverItsSource() throws {
        try TemporaryDirectory.with { (dir) throws in
            let store = try StateStore.openForWriting(path: dir.file("state.db"))
            // Keys in every combination of: a default (equal to the values or not), active before, fetched now.
            var defaults: [String: String] = [:]
            var before: [String: String] = [:]
            var after: [String: String] = [:]
            for n in 0..<400 {
                let key = "k\(n)"
                switch n % 4 {
                case 0: break
                case 1: defaults[key] = "v"
                case 2: defaults[key] = "d\(n)"
                default: defaults[key] = n % 8 == 3 ? "" : "v\(n % 3)"
                }
                if n % 3 != 0 { before[key] = n % 5 == 0 ? "v" : "v\(n % 2)" }
                if n % 7 != 0 { after[key] = n % 11 == 0 ? "v" : "v\(n % 3)" }
            }
            try store.replaceDefaults(defaults)
            try store.recordFetch(
                .update(values: RemoteValues(before), templateVersion: "1", etag: nil), at: t0, activate: true)
            let activation = try store.recordFetch(
                .update(values: RemoteValues(after), templateVersion: "2", etag: nil), at: t0 + .seconds(1),
                activate: true,
                withValues: true)
            let keys = Set(defaults.keys).union(before.keys).union(after.keys)
            let expected = keys.filter { seen($0, before, defaults) != seen($0, after, defaults) }.sorted()
            #expect(!expected.isEmpty && expected.count < keys.count)
            #expect(activation?.changedKeys == expected)
            #expect(activation?.changes?.map(\.key) == expected)
            for change in activation?.changes ?? [] {
                #expect(change.old == seen(change.key, before, defaults), "\(change.key)")
                #expect(change.new == seen(change.key, after, defaults), "\(change.key)")
            }
            // Without the values, the same keys.
            let again = try store.recordFetch(
                .update(values: RemoteValues(before), templateVersion: "3", etag: nil), at: t0 + .seconds(2),
                activate: true)
            #expect(again?.changedKeys == expected)
        }
    }
}
