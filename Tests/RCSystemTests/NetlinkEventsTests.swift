import RCSystem
import Testing

/// rtnetlink batches as the kernel multicasts them: which say the network may have come up.
@Suite struct NetlinkEventsTests {
    /// One message: a 16-byte header (length, type, flags, sequence, port id), the payload, padding.
    static func message(type: UInt16, payload: [UInt8]) -> [UInt8] {
        let length = UInt32(16 + payload.count)
        var bytes =
            withUnsafeBytes(of: length.littleEndian, Array.init) + withUnsafeBytes(of: type.littleEndian, Array.init)
        bytes += [UInt8](repeating: 0, count: 10) + payload
        return bytes + [UInt8](repeating: 0, count: (4 - bytes.count % 4) % 4)
    }

    /// A struct ifinfomsg: family, pad, type, index, flags, change mask.
    static func link(flags: UInt32) -> [UInt8] {
        message(
            type: 16,
            payload: [0, 0, 1, 0, 2, 0, 0, 0] + withUnsafeBytes(of: flags.littleEndian, Array.init) + [
                0xFF, 0xFF, 0xFF, 0xFF,
            ])
    }

    static let address = message(type: 20, payload: [2, 8, 0x80, 0xFE, 1, 0, 0, 0])

    @Test func aNewAddressOrRouteMayMeanTheNetworkIsUp() {
        #expect(NetlinkEvents.networkMayBeUp(Self.address))
        #expect(NetlinkEvents.networkMayBeUp(Self.message(type: 24, payload: [UInt8](repeating: 2, count: 12))))
    }

    @Test func aLinkCountsOnlyWhenUpAndRunning() {
        #expect(NetlinkEvents.networkMayBeUp(Self.link(flags: 0x1 | 0x40)))
        #expect(!NetlinkEvents.networkMayBeUp(Self.link(flags: 0x1)), "up without carrier")
        #expect(!NetlinkEvents.networkMayBeUp(Self.link(flags: 0x40 | 0x2)), "carrier, administratively down")
    }

    @Test func removalsDoNotCount() {
        #expect(!NetlinkEvents.networkMayBeUp(Self.message(type: 21, payload: [2, 8, 0x80, 0xFE, 1, 0, 0, 0])))
        #expect(!NetlinkEvents.networkMayBeUp(Self.message(type: 17, payload: [UInt8](repeating: 0, count: 16))))
    }

    @Test func aBatchIsReadMessageByMessage() {
        let batch = Self.link(flags: 0x1) + Self.message(type: 21, payload: [1, 2, 3]) + Self.address
        #expect(NetlinkEvents.networkMayBeUp(batch))
    }

    @Test func truncatedOrLyingLengthsEndTheBatchWithoutTrapping() {
        #expect(!NetlinkEvents.networkMayBeUp(Array(Self.address.prefix(10))))
        var lying = Self.address
        lying[0] = 0xFF  // a length past the end of the buffer
        #expect(!NetlinkEvents.networkMayBeUp(lying))
        lying[0] = 4  // a length shorter than a header
        #expect(!NetlinkEvents.networkMayBeUp(lying))
        #expect(!NetlinkEvents.networkMayBeUp(Array(Self.link(flags: 0x41).prefix(20))), "a link message cut short")
        #expect(!NetlinkEvents.networkMayBeUp([]))
    }
}
