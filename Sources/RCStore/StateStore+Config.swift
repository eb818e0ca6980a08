import Glibc
import RCCore

extension StateStore {
    /// Opens the database `config` names for writing, creating the state directory when missing.
    /// A database created here gets the defaults file's values at once, so readers never see a
    /// cache that has lost its defaults.
    public static func open(config: AgentConfig) throws -> StateStore {
        let path = config.databasePath
        let isNew = !FileBytes.exists(path)
        // Read the defaults before creating anything: a bad defaults file must not leave behind
        // a new database without them (it would not be new on the next open).
        let defaults = try isNew ? readDefaults(path: config.defaults) : nil
        try FileBytes.makeDirectories(config.stateDirectory)
        let store = try openForWriting(path: path)
        if let defaults {
            try store.replaceDefaults(defaults)
        }
        // root writing for the daemon's user (`rcagent mark-stale` with the daemon stopped): the files
        // keep the state directory's owner, or the daemon could no longer write its own database.
        if geteuid() == 0 {
            var directory = stat()
            if stat(config.stateDirectory, &directory) == 0, directory.st_uid != 0 {
                for suffix in ["", "-wal", "-shm"] {
                    // Through a descriptor opened without following links: whoever can write the
                    // directory could otherwise swap in a symlink and have root chown its target.
                    guard
                        let fd = FileDescriptor(
                            returnedBy: Glibc.open(
                                path + suffix, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC))
                    else { continue }
                    var info = stat()
                    if fstat(fd.rawValue, &info) == 0, info.st_mode & S_IFMT == S_IFREG {
                        _ = fchown(fd.rawValue, directory.st_uid, directory.st_gid)
                    }
                    fd.close()
                }
            }
        }
        return store
    }

    /// The defaults file's values, or `nil` when there is no such file.
    public static func readDefaults(path: String) throws -> [String: String]? {
        guard let bytes = try FileBytes.read(path, symlinks: .trustedOwners) else { return nil }
        return try DefaultsDocument.parse(bytes, name: path)
    }
}
