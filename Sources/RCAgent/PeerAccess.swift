import Glibc
import RCCore

/// Who is on the other end of a Unix socket (SO_PEERCRED).
struct PeerCredentials: Sendable {
    let pid: Int32
    let uid: UInt32
    let gid: UInt32
}

/// Decides which peers may send state-changing commands: root, the daemon's own user, or a
/// member of `SocketGroup` (primary or supplementary group of the peer process).
struct PeerAccess: Sendable {
    let groupName: String?
    let groupId: UInt32?

    init(groupName: String?) {
        self.groupName = groupName
        groupId = groupName.flatMap { name in getgrnam(name).map { $0.pointee.gr_gid } }
    }

    static func credentials(of fd: Int32) -> PeerCredentials? {
        // struct ucred { pid_t pid; uid_t uid; gid_t gid; }: three 32-bit fields (Glibc hides the
        // type behind _GNU_SOURCE, so read it as an array of three).
        var credentials: [UInt32] = [0, 0, 0]
        var length = socklen_t(12)
        let rc = credentials.withUnsafeMutableBytes { getsockopt(fd, SOL_SOCKET, SO_PEERCRED, $0.baseAddress, &length) }
        guard rc == 0, length == 12 else { return nil }
        return PeerCredentials(pid: Int32(bitPattern: credentials[0]), uid: credentials[1], gid: credentials[2])
    }

    func allows(_ peer: PeerCredentials?) -> Bool {
        guard let peer else { return false }
        if peer.uid == 0 || peer.uid == geteuid() { return true }
        guard let groupId else { return false }
        return peer.gid == groupId || Self.supplementaryGroups(of: peer.pid).contains(groupId)
    }

    /// The `Groups:` line of /proc/PID/status: the peer process's supplementary groups.
    private static func supplementaryGroups(of pid: Int32) -> [UInt32] {
        guard let bytes = try? FileBytes.read("/proc/\(pid)/status", limit: 1 << 20) else { return [] }
        let text = String(decoding: bytes, as: UTF8.self)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Groups:") }) else { return [] }
        return line.dropFirst("Groups:".count).split(whereSeparator: { $0 == " " || $0 == "\t" }).compactMap {
            UInt32($0)
        }
    }
}
