import CLinux
import Glibc
import RCCore
import RCService
import RCSystem

/// The control socket's file: created with its final mode and group in one step, and removed only
/// while it is still the file this daemon made.
///
/// Nothing here changes a file by path after `bind()`. The daemon is often root, and the socket's
/// directory may be writable by another user (a `Socket=` in `/tmp`, a directory with loose modes):
/// that user can swap the name for something else at any moment. A `chown(path)` after `bind()`
/// then followed a symlink swapped in and gave a root-only file to the socket group.
/// `lchown`/`fchownat(AT_SYMLINK_NOFOLLOW)` would still change a hard link swapped in, and
/// `fchown` on the socket descriptor changes the socket's own inode, not the file (Linux).
/// So the file is born right: `bind()` creates it with mode `0666 & ~umask` and the calling
/// thread's file-system gid, and the daemon sets both around that one call (umask 0117 gives 0660;
/// `setfsgid` is per thread, so no other thread creates files with that group meanwhile). What
/// follows only reads (`fstatat` without following links): it reports a group the kernel did not
/// give, and refuses to go on when the name no longer holds a socket of ours.
final class SocketFile: Sendable {
    let path: String
    /// The listening socket (closed with this object).
    let listener: FileDescriptor
    /// The socket's directory, held open so that ``remove()`` unlinks in the directory that was
    /// checked, whatever happens to the path's other components.
    private let directory: FileDescriptor
    private let name: String
    private let device: UInt64
    private let inode: UInt64

    /// Binds and listens on `path` (mode 0660, group `groupId` when given), replacing a socket file
    /// left by a daemon that died. Anything else at `path` is left alone and is an error.
    init(path: String, groupId: UInt32?, groupName: String?, log: Logger) throws(SystemError) {
        self.path = path
        let slash = path.lastIndex(of: "/")
        let directoryPath = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        guard !name.isEmpty else { throw SystemError("bind \(path) (not a file name)", errno: EISDIR) }
        var address = try UnixSocket.address(path, for: "bind")
        // mkdir never changes what exists; a symlinked component only decides where the socket
        // lands, and that directory is what is checked below.
        if directoryPath != "/" && directoryPath != "." {
            try FileBytes.makeDirectories(directoryPath, whenRefused: FileBytes.createItHint(directoryPath))
        }
        // Both descriptors opened here close on the way out should anything below throw.
        guard let directory = FileDescriptor(returnedBy: open(directoryPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) else {
            throw SystemError("open \(directoryPath)")
        }

        var info = stat()
        if fstat(directory.rawValue, &info) == 0, let who = FileWriters.others(info) {
            // Owned by another user (root running the daemon in the package's /run/rcagent): the
            // cure is that user, not another directory.
            let cure =
                info.st_uid != 0 && info.st_uid != geteuid()
                ? "run the daemon as the directory's owner (the package's unit runs it as rcagent), "
                    + "or use a directory only this user can write"
                : "use a directory only the daemon's user can write (like /run/rcagent)"
            log.warning(
                "The socket directory \(directoryPath) can be written by \(who): they can remove the socket or put "
                    + "another in its place; \(cure)")
        }

        // A socket file left by a daemon that died is in the way; a live daemon would answer.
        // Anything that is not a socket is not ours to delete.
        if fstatat(directory.rawValue, name, &info, AT_SYMLINK_NOFOLLOW) == 0 {
            guard info.st_mode & S_IFMT == S_IFSOCK else {
                throw SystemError("bind \(path) (it exists and is not a socket; not removing it)", errno: EEXIST)
            }
            if UnixSocket.answers(path) {
                throw SystemError("bind \(path) (another rcagentd is running there)", errno: EADDRINUSE)
            }
            if unlinkat(directory.rawValue, name, 0) != 0 && errno != ENOENT { throw SystemError("unlink \(path)") }
        }

        let fd = try UnixSocket.stream()
        let umaskBefore = umask(0o117)
        let fsgidBefore = groupId.map { rcagent_setfsgid($0) }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd.rawValue, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        let bindErrno = errno
        if let fsgidBefore { _ = rcagent_setfsgid(UInt32(bitPattern: fsgidBefore)) }
        umask(umaskBefore)
        guard rc == 0 else { throw SystemError("bind \(path)", errno: bindErrno) }

        guard fstatat(directory.rawValue, name, &info, AT_SYMLINK_NOFOLLOW) == 0, info.st_mode & S_IFMT == S_IFSOCK,
            info.st_uid == geteuid()
        else {
            throw SystemError(
                "bind \(path) (the socket file was replaced right after bind: another user can write \(directoryPath))",
                errno: EEXIST)
        }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        if let groupId, info.st_gid != groupId {
            log.warning(
                "Failed to give \(path) to group \(groupName ?? String(groupId)): it has group \(info.st_gid) "
                    + "(a set-group-id directory, or a daemon that is neither root nor running with that group), ignoring"
            )
        }
        guard listen(fd.rawValue, 128) == 0 else { throw SystemError("listen \(path)") }
        listener = fd
        self.directory = directory
    }

    /// Removes the socket file, if the name still holds the socket this daemon bound. The directory
    /// and the listener stay open until this object goes (the accept thread may still hold the
    /// listener's number).
    func remove() {
        var info = stat()
        if fstatat(directory.rawValue, name, &info, AT_SYMLINK_NOFOLLOW) == 0, info.st_mode & S_IFMT == S_IFSOCK,
            UInt64(info.st_dev) == device, UInt64(info.st_ino) == inode
        {
            unlinkat(directory.rawValue, name, 0)
        }
    }
}
