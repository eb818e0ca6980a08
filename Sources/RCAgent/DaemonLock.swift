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

    /// Open while the lock is held (close-on-exec: no hook or helper inherits it).
    private let descriptor: Int32

    /// Takes the lock for `config`'s state directory, creating the directory (as the database's
    /// open would) and the lock file (0600) when missing. Throws when another process holds it,
    /// naming the file; a file system without `flock` (some network ones) runs without the lock,
    /// as before it, after a warning.
    init?(config: AgentConfig, log: Logger) throws(SystemError) {
        let path = config.stateDirectory + "/" + Self.fileName
        try FileBytes.makeDirectories(
            config.stateDirectory, whenRefused: FileBytes.createItHint(config.stateDirectory))
        let fd = Posix.retrying { open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0o600) }
        guard fd >= 0 else { throw SystemError("open \(path)") }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw SystemError("lock \(path) (it is not a regular file)", errno: EEXIST)
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

    deinit { close(descriptor) }
}
