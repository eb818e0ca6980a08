import CLinux
import Glibc
import RCCore
import RCSystem

/// Tells the agent when the network may have come up (a network-online transition
/// refetches when stale): an rtnetlink socket joined to the link, address and route groups.
final class NetworkMonitor: Sendable {
    private let watch: DescriptorWatch

    /// Throws when the kernel refuses the socket (the daemon then runs without).
    init(onChange: @escaping @Sendable () -> Void) throws {
        guard
            let netlink = FileDescriptor(
                returnedBy: socket(
                    AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue),
                    0
                ))
        else { throw SystemError("netlink socket") }
        // Port id 0: the kernel assigns one.
        var address = rcagent_sockaddr_nl()
        address.nl_family = UInt16(AF_NETLINK)
        address.nl_groups = NetlinkEvents.groups
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(netlink.rawValue, $0, socklen_t(MemoryLayout<rcagent_sockaddr_nl>.size))
            }
        }
        guard bound == 0 else { throw SystemError("bind netlink") }
        watch = DescriptorWatch(netlink, label: "rcagent.network") { fd in
            if Self.drain(fd) { onChange() }
        }
    }

    func stop() { watch.stop() }

    /// Reads every queued batch; whether any says the network may be up.
    private static func drain(_ fd: Int32) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        var mayBeUp = false
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            // ENOBUFS: the kernel dropped messages it could not queue; something did change.
            if n < 0 && errno == ENOBUFS {
                mayBeUp = true
                continue
            }
            if n <= 0 { return mayBeUp }
            if NetlinkEvents.networkMayBeUp(Array(buffer[0..<n])) { mayBeUp = true }
        }
    }
}
