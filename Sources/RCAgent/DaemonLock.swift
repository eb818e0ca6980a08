import Glibc
import RCCore
import RCService
import RCSystem

/// One daemon per state directory: an exclusive `flock` on `StateDirectory/rcagentd.lock`, taken
/// before the daemon opens its database or probes its socket, and held until the process ends (the
/// kernel lets go of it however the process ends: no stale lock after a crash).
///
/// Probing the socket alone left a window. A daemon binds its socket only after its state is open
/// and its activation done, so two started at one instant both found nobody answering and both
/// opened the database; and a second daemon that found the first's socket bound but not yet
/// listening took it for a dead one's, removed it and bound its own: two daemons writing one
/// database. Two configs naming one state directory and different sockets were never caught at all.
final class DaemonLock: Sendable {
    static let fileName = "rcagentd.lock"

    /// The locked file's descriptor (close-on-exec: no hook or helper inherits it). Never closed:
    /// the lock lasts until the process ends, past the return of `Daemon.run` (a fetch abandoned by
    /// a late stop may still commit until `exit`).
    private let descriptor: Int32

    /// Takes the lock for `config`'s state directory, creating the directory (as the database's
    /// open would) and the lock file when missing: 0600, and the directory owner's when root makes
    /// it for the daemon's user (as the database), so that neither another user can take the lock
    /// (a file others may open, they could lock, and no daemon would start) nor root's file keep
    /// the service's user out. Throws when another process holds it, naming the file; a file
    /// system without `flock` (some network ones) runs without the lock, as before it, after a
    /// warning.
    init?(config: AgentConfig, log: Logger) throws(SystemError) {
        let path = config.stateDirectory + "/" + Self.fileName
        try FileBytes.makeDirectories(
            config.stateDirectory, whenRefused: FileBytes.createItHint(config.stateDirectory))
        // Read-only: `flock` needs no more. O_NONBLOCK: a FIFO planted here does not block the open.
        // Created only when missing: on a file system mounted read-only, O_CREAT fails even for a
        // file that exists (EROFS), and a lock there still works.
        let flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY
        var fd = Posix.retrying { open(path, flags) }
        if fd < 0 && errno == ENOENT { fd = Posix.retrying { open(path, flags | O_CREAT, 0o600) } }
        // A read-only state directory without the file: nothing to lock, and the database's open
        // says what is wrong next (rcagentd(8), "Storage failures").
        if fd < 0 && errno == EROFS { return nil }
        guard fd >= 0 else { throw SystemError("open \(path)") }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw SystemError("lock \(path) (it is not a regular file)", errno: EEXIST)
        }
        if let (uid, gid) = FileBytes.ownerForRootWrites(in: config.stateDirectory), info.st_uid != uid {
            _ = fchown(fd, uid, gid)
        }
        guard Posix.retrying({ flock(fd, LOCK_EX | LOCK_NB) }) == 0 else {
            let failure = errno
            close(fd)
            if failure == EWOULDBLOCK {
                throw SystemError(
                    "lock \(path) (another rcagentd is running on \(config.stateDirectory))", errno: failure)
            }
            log.warning(
                "Cannot lock \(path) (\(SystemError("flock", errno: failure))): nothing stops a second daemon "
                    + "on this state directory")
            return nil
        }
        descriptor = fd
    }
}
