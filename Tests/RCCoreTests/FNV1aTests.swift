import RCCore
import Testing

/// `FNV1a`: the published 64-bit FNV-1a values.
@Suite struct FNV1aTests {
    @Test func matchesThePublishedTestVectors() {
        #expect(FNV1a.hash([UInt8]()) == 0xcbf2_9ce4_8422_2325)
        #expect(FNV1a.hash("a".utf8) == 0xaf63_dc4c_8601_ec8c)
        #expect(FNV1a.hash("foobar".utf8) == 0x8594_4171_f739_67e8)
    }
}
