/// What a batch of rtnetlink messages (NETLINK_ROUTE, as the kernel multicasts them) says about the
/// network: whether it may just have come up. Parsed from raw bytes: a truncated or malformed
/// message ends the batch, it never traps.
public enum NetlinkEvents {
    /// Message types (linux/rtnetlink.h).
    static let newLink: UInt16 = 16
    static let newAddress: UInt16 = 20
    static let newRoute: UInt16 = 24
    /// Interface flags (linux/if.h): administratively up, and the link has carrier.
    static let up: UInt32 = 0x1
    static let running: UInt32 = 0x40
    static let headerSize = 16
    static let linkInfoSize = 16

    /// The multicast groups to join: link changes, and IPv4/IPv6 addresses and routes.
    public static let groups: UInt32 = 0x1 | 0x10 | 0x40 | 0x100 | 0x400

    /// Whether any message reports a link up and running, a new address or a new route.
    public static func networkMayBeUp(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset + headerSize <= bytes.count {
            let length = Int(word(bytes, offset))
            let type = UInt16(bytes[offset + 4]) | UInt16(bytes[offset + 5]) << 8
            guard length >= headerSize, offset + length <= bytes.count else { return false }
            switch type {
            case newAddress, newRoute:
                return true
            case newLink where length >= headerSize + linkInfoSize:
                let flags = word(bytes, offset + headerSize + 8)
                if flags & (up | running) == up | running { return true }
            default:
                break
            }
            offset += (length + 3) & ~3  // messages are 4-byte aligned
        }
        return false
    }

    /// A little-endian (host order on every platform this runs on) 32-bit word.
    private static func word(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16
            | UInt32(bytes[offset + 3]) << 24
    }
}
