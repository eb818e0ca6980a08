import Glibc
import RCCore
import RCSystem

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
        try FileBytes.makeDirectories(
            config.stateDirectory, whenRefused: FileBytes.createItHint(config.stateDirectory))
        // root writing for the daemon's user (`rcagent mark-stale` with the daemon stopped): the files
        // keep the state directory's owner, or the daemon could no longer write its own database.
        let owner = FileBytes.ownerForRootWrites(in: config.stateDirectory)
        // Before SQLite opens them: closing any descriptor of a file drops every POSIX lock this
        // process holds on it, SQLite's included (its lock on -shm tells others the file is in use).
        makePrivate(path, owner: owner)
        let store = try openForWriting(path: path, owner: owner)
        if let defaults {
            try store.replaceDefaults(defaults)
        }
        return store
    }

    /// Gives the database and its WAL files mode 0640 (and `owner`, when root writes for the daemon's
    /// user): a reader that may open them can hold back every checkpoint, so only the daemon's user
    /// and its group may; everyone else reads the reader file. SQLite gives new `-wal`/`-shm` files
    /// the database's mode and, run as root, its owner, so an older installation's 0644 files are
    /// mended here once. Only ever before this process opens the database with SQLite.
    static func makePrivate(_ path: String, owner: (uid_t, gid_t)?) {
        for suffix in ["", "-wal", "-shm"] {
            // Through a descriptor opened without following links: whoever can write the
            // directory could otherwise swap in a symlink and have root chown its target.
            guard
                let fd = FileDescriptor(
                    returnedBy: Glibc.open(path + suffix, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC))
            else { continue }
            var info = stat()
            if fstat(fd.rawValue, &info) == 0, info.st_mode & S_IFMT == S_IFREG {
                if let (uid, gid) = owner { _ = fchown(fd.rawValue, uid, gid) }
                if info.st_mode & 0o7777 != 0o640 { _ = fchmod(fd.rawValue, 0o640) }
            }
            fd.close()
        }
    }

    /// The defaults file's values, or `nil` when there is no such file.
    public static func readDefaults(path: String) throws -> [String: String]? {
        guard let bytes = try FileBytes.read(path, symlinks: .trustedOwners) else { return nil }
        return try DefaultsDocument.parse(bytes, name: path)
    }
}
