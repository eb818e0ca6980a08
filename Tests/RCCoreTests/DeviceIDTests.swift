import RCCore
import Testing

/// Firebase-installation-style device ids: `^[cdef][\w-]{21}$`.
@Suite struct DeviceIDTests {
    @Test func generatedIdsHaveTheFIDShapeAndAreUnique() throws {
        let pattern = try Regex("^[cdef][A-Za-z0-9_-]{21}$")
        let ids = (0..<2_000).map { _ in DeviceID.generate() }
        for id in ids {
            #expect(id.wholeMatch(of: pattern) != nil, "\(id)")
            #expect(DeviceID.isValid(id), "\(id)")
        }
        #expect(Set(ids).count == ids.count)
        // The first character carries two random bits: all four letters turn up.
        #expect(Set(ids.map(\.first!)) == ["c", "d", "e", "f"])
        // The rest is base64url: over 2,000 ids both URL-safe characters appear, and no '+', '/' or '='.
        let characters = Set(ids.joined())
        #expect(characters.isSuperset(of: ["-", "_"]))
        #expect(characters.isDisjoint(with: ["+", "/", "="]))
    }

    @Test(arguments: [
        "cAAAAAAAAAAAAAAAAAAAAA",
        "dzzzzzzzzzzzzzzzzzzzzz",
        "e0123456789-_abcdefghi",
        "f_____________________",
    ])
    func validIds(_ id: String) {
        #expect(id.utf8.count == 22)
        #expect(DeviceID.isValid(id))
    }

    @Test(arguments: [
        "",
        "c",
        "cAAAAAAAAAAAAAAAAAAAA",  // 21 characters
        "cAAAAAAAAAAAAAAAAAAAAAA",  // 23 characters
        "aAAAAAAAAAAAAAAAAAAAAA",
        "bAAAAAAAAAAAAAAAAAAAAA",
        "gAAAAAAAAAAAAAAAAAAAAA",
        "CAAAAAAAAAAAAAAAAAAAAA",
        "-AAAAAAAAAAAAAAAAAAAAA",
        "cAAAAAAAAAAAAAAAAAAAA+",
        "cAAAAAAAAAAAAAAAAAAAA/",
        "cAAAAAAAAAAAAAAAAAAAA=",
        "cAAAAAAAAAA AAAAAAAAAA",
        "cAAAAAAAAAAAAAAAAAAAé",  // 22 bytes, but not ASCII
        "cAAAAAAAAAAAAAAAAAAA.A",
    ])
    func invalidIds(_ id: String) {
        #expect(!DeviceID.isValid(id))
    }
}
