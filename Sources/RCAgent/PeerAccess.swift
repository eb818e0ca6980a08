import CLinux
import Glibc
import RCCore

/// Who is on the other end of a Unix socket, as the kernel recorded it when the peer called
/// `connect()`: SO_PEERCRED (pid, uid, primary gid) and SO_PEERGROUPS (supplementary groups).
struct PeerCredentials: Sendable {
    let pid: Int32
    let uid: UInt32
    let gid: UInt32
    let groups: [UInt32]
}

/// Decides which peers may send state-changing commands: root, the daemon's own user, or a
/// member of `SocketGroup` (primary or supplementary group of the peer when it connected).
struct PeerAccess: Sendable {
    let groupName: String?
    let groupId: UInt32?

    init(groupName: String?) {
        self.groupName = groupName
        groupId = groupName.flatMap { name in getgrnam(name).map { $0.pointee.gr_gid } }
    }

    /// The peer's credentials, or `nil` when the kernel cannot say (then nothing is allowed).
    ///
    /// Both options report the credentials captured at `connect()`, which belong to the connection:
    /// they stay the same whoever holds the descriptor later. Reading `/proc/PID/status` instead (as
    /// this once did) asked about whatever process has that pid *now*: a refused peer could pass its
    /// descriptor to a child and exit, and a group member that reused the pid was then asked instead.
    static func credentials(of fd: Int32) -> PeerCredentials? {
        // struct ucred, as CLinux declares it (Glibc hides the type behind _GNU_SOURCE).
        var credentials = rcagent_ucred()
        var length = socklen_t(MemoryLayout<rcagent_ucred>.size)
        let rc = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length)
        guard rc == 0, length == MemoryLayout<rcagent_ucred>.size else { return nil }
        return PeerCredentials(
            pid: credentials.pid, uid: credentials.uid, gid: credentials.gid,
            groups: supplementaryGroups(of: fd) ?? [])
    }

    /// SO_PEERGROUPS (Linux 4.13): the peer's supplementary groups at connect time. `nil` when the
    /// kernel does not know the option: a member by a supplementary group alone is then refused,
    /// never let in on a guess.
    private static func supplementaryGroups(of fd: Int32) -> [UInt32]? {
        var groups = [UInt32](repeating: 0, count: 64)
        while true {
            var length = socklen_t(groups.count * MemoryLayout<UInt32>.size)
            let rc = groups.withUnsafeMutableBytes {
                getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, $0.baseAddress, &length)
            }
            if rc == 0 { return Array(groups.prefix(Int(length) / MemoryLayout<UInt32>.size)) }
            // ERANGE: the buffer is too small and `length` now holds the size needed (at most
            // NGROUPS_MAX = 65,536 groups, 256 KiB).
            guard errno == ERANGE, Int(length) > groups.count * MemoryLayout<UInt32>.size else { return nil }
            groups = [UInt32](repeating: 0, count: Int(length) / MemoryLayout<UInt32>.size)
        }
    }

    /// Whether `peer` may change state: root, the daemon's own user, or a member of `SocketGroup`.
    func allows(_ peer: PeerCredentials?) -> Bool {
        guard let peer else { return false }
        if peer.uid == 0 || peer.uid == geteuid() { return true }
        guard let groupId else { return false }
        return peer.gid == groupId || peer.groups.contains(groupId)
    }
}
