#if canImport(Glibc)
    import Glibc
#endif

/// Linux's O_PATH on x86-64, arm and arm64 (asm-generic), which Glibc's module leaves out (_GNU_SOURCE).
private let O_PATH: Int32 = 0o10_000_000

/// Whole-file reads and durable whole-file writes with plain POSIX calls (no Foundation needed).
///
/// Every path read here may come from a config file, so reading never blocks and never reads
/// anything but a regular file: a FIFO blocks `open` until a writer appears (forever, and
/// SIGTERM cannot interrupt a thread stuck there), a character device may never end or have side
/// effects on open. Such files are refused with an error naming what they are.
public enum FileBytes {
    /// Which symbolic links on the way to a file are followed.
    public enum SymlinkPolicy: Sendable {
        /// Any link (paths the program itself chose, `/proc`, `/etc/timezone`).
        case any
        /// Only links owned by root or by this process's effective user: a link another user
        /// planted could point at a file only this process may read, and hand its content to
        /// that user through values, errors or logs. Used for the files config names.
        case trustedOwners
    }

    /// The file's bytes, or `nil` when it does not exist. Files over `limit` bytes, and anything
    /// that is not a regular file, are an error.
    public static func read(
        _ path: String, limit: Int = 64 << 20, symlinks: SymlinkPolicy = .any
    ) throws(SystemError) -> [UInt8]? {
        guard let fd = try openRegularFile(path, flags: O_RDONLY, symlinks: symlinks) else { return nil }
        var bytes: [UInt8] = []
        // Not zero-filled first: that cost more than reading a small file.
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 1)
        defer { chunk.deallocate() }
        while true {
            // Read at most one byte past the limit: a huge file costs `limit`, not its size.
            let want = min(chunk.count, limit + 1 - bytes.count)
            let n = Posix.retrying { Glibc.read(fd.rawValue, chunk.baseAddress, want) }
            if n < 0 { throw SystemError("read \(path)") }
            if n == 0 { return bytes }
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[0..<n]))
            if bytes.count > limit {
                throw SystemError("read \(path)", reason: "larger than \(limit) bytes", errno: EFBIG)
            }
        }
    }

    /// Checks that `path` names a regular file that can be opened for reading, without blocking
    /// and without reading it: for paths handed to a library that opens them itself (TLS files).
    public static func checkRegularFile(_ path: String, symlinks: SymlinkPolicy = .trustedOwners) throws(SystemError) {
        guard let fd = try openRegularFile(path, flags: O_RDONLY, symlinks: symlinks) else {
            throw SystemError("open \(path)", errno: ENOENT)
        }
        fd.close()
    }

    /// ``openRegularFile(_:flags:)`` under a ``SymlinkPolicy``. With `.trustedOwners` the path is
    /// walked one component at a time through descriptors (`O_PATH|O_NOFOLLOW`), each link's owner
    /// checked on the link that is then followed, and the file reopened from its own descriptor: a
    /// check by path before the open left a window in which a user who can write a directory on the
    /// way swapped a link of their own in (and back out), and the daemon read a file only it may read
    /// (won within 40 s, the fetch that inotify starts being the starting signal).
    static func openRegularFile(
        _ path: String, flags: Int32, symlinks: SymlinkPolicy
    ) throws(SystemError) -> FileDescriptor? {
        guard symlinks == .trustedOwners else { return try openRegularFile(path, flags: flags) }
        let me = geteuid()
        var pending = Array(path.split(separator: "/", omittingEmptySubsequences: true).reversed().map(String.init))
        // Each descriptor below closes when it goes out of scope or is replaced (FileDescriptor).
        guard
            var directory = FileDescriptor(
                returnedBy: open(path.hasPrefix("/") ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC))
        else { throw SystemError("open \(path)") }
        var links = 0
        // The path as walked so far, for errors: links replaced by what they point to.
        var walked = path.hasPrefix("/") ? "" : "."
        while let component = pending.popLast() {
            guard
                let fd = FileDescriptor(
                    returnedBy: Posix.retrying {
                        openat(directory.rawValue, component, O_PATH | O_NOFOLLOW | O_CLOEXEC)
                    })
            else {
                if errno == ENOENT { return nil }
                throw SystemError("open \(path)")
            }
            var info = stat()
            guard fstat(fd.rawValue, &info) == 0 else { throw SystemError("fstat \(path)") }
            if info.st_mode & S_IFMT == S_IFLNK {
                guard info.st_uid == 0 || info.st_uid == me else {
                    throw SystemError(
                        "open \(path)",
                        reason:
                            "\(walked)/\(component) is a symbolic link owned by uid \(info.st_uid) (only links owned by root or uid \(me) are followed)",
                        errno: EPERM)
                }
                links += 1
                guard links <= 40 else { throw SystemError("open \(path)", errno: ELOOP) }
                var target = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
                let n = readlinkat(fd.rawValue, "", &target, target.count - 1)
                guard n >= 0 else { throw SystemError("readlink \(path)") }
                let text = String(decoding: target[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
                if text.hasPrefix("/") {
                    guard let root = FileDescriptor(returnedBy: open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) else {
                        throw SystemError("open /")
                    }
                    directory = root  // closes the directory it replaces
                    walked = ""
                }
                pending += text.split(separator: "/", omittingEmptySubsequences: true).reversed().map(String.init)
                continue
            }
            if pending.isEmpty {
                // The file itself: refuse special files before opening them for real, then reopen
                // this very inode (not the path again) through /proc.
                try requireRegular(info, path: path)
                return try openRegularFile("/proc/self/fd/\(fd.rawValue)", flags: flags, reportedAs: path)
            }
            directory = fd  // closes the directory it replaces
            walked += "/" + component
        }
        // An empty path, "/" or ".": a directory.
        throw SystemError("open \(path)", reason: "is a directory, not a regular file", errno: EISDIR)
    }

    /// Opens `path` without blocking (O_NONBLOCK: a FIFO without a writer; O_NOCTTY: a terminal
    /// must not become the controlling one) and returns the descriptor only when it is a regular
    /// file; `nil` when nothing exists there. A `stat` first keeps special files from even being
    /// opened (opening some devices acts on them); the `fstat` after closes the race with a swap.
    public static func openRegularFile(_ path: String, flags: Int32) throws(SystemError) -> FileDescriptor? {
        try openRegularFile(path, flags: flags, reportedAs: path)
    }

    private static func openRegularFile(
        _ opened: String, flags: Int32, reportedAs path: String
    ) throws(SystemError) -> FileDescriptor? {
        var info = stat()
        if stat(opened, &info) != 0 {
            if errno == ENOENT { return nil }
            throw SystemError("open \(path)")
        }
        try requireRegular(info, path: path)
        guard
            let fd = FileDescriptor(
                returnedBy: Posix.retrying { open(opened, flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC) })
        else {
            if errno == ENOENT { return nil }
            throw SystemError("open \(path)")
        }
        // On a throw, `fd` closes on the way out.
        if fstat(fd.rawValue, &info) != 0 { throw SystemError("fstat \(path)") }
        try requireRegular(info, path: path)
        return fd
    }

    private static func requireRegular(_ info: stat, path: String) throws(SystemError) {
        let kind = info.st_mode & S_IFMT
        guard kind != S_IFREG else { return }
        let what =
            switch kind {
            case S_IFIFO: "a FIFO"
            case S_IFDIR: "a directory"
            case S_IFCHR: "a character device"
            case S_IFBLK: "a block device"
            case S_IFSOCK: "a socket"
            default: "not a plain file"
            }
        throw SystemError(
            "open \(path)", reason: "is \(what), not a regular file", errno: kind == S_IFDIR ? EISDIR : EINVAL)
    }

    /// Replaces `path` with `bytes` so that a crash leaves either the old or the new file:
    /// write a temporary file beside it, fsync it, rename it over, then fsync the directory
    /// so the rename itself is durable. The temporary name is unpredictable and created with
    /// O_EXCL|O_NOFOLLOW: with a fixed name, whoever can write the directory could plant a
    /// symlink there and have this process write (as root, with `mode`) through it. `exactMode`:
    /// the file gets `mode` whatever the umask (another user's program reads it).
    public static func writeAtomically(
        _ path: String, _ bytes: [UInt8], mode: mode_t = 0o644, exactMode: Bool = false
    ) throws(SystemError) {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let base = slash.map { String(path[path.index(after: $0)...]) } ?? path
        var temporary = ""
        var opened: Int32 = -1
        for _ in 0..<8 {
            temporary = "\(directory)/.\(base).tmp-\(String(UInt64.random(in: 1...UInt64.max), radix: 36))"
            opened = Posix.retrying { open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode) }
            if opened >= 0 || errno != EEXIST { break }
        }
        guard let fd = FileDescriptor(returnedBy: opened) else { throw SystemError("open \(temporary)") }
        // On a throw, `fd` closes on the way out; the temporary file goes first.
        func fail(_ operation: String) -> SystemError {
            let error = SystemError(operation)
            unlink(temporary)
            return error
        }
        if exactMode, fchmod(fd.rawValue, mode) != 0 { throw fail("chmod \(temporary)") }
        guard Posix.writeAll(fd.rawValue, bytes) else { throw fail("write \(temporary)") }
        if fsync(fd.rawValue) != 0 { throw fail("fsync \(temporary)") }
        fd.close()
        if rename(temporary, path) != 0 {
            let error = SystemError("rename \(temporary)")
            unlink(temporary)
            throw error
        }
        if let parent = FileDescriptor(returnedBy: open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
            fsync(parent.rawValue)
            parent.close()
        }
    }
}

extension FileBytes {
    /// Removes the file at `path`; `false` when it could not (there was none, or no permission).
    @discardableResult
    public static func remove(_ path: String) -> Bool { unlink(path) == 0 }

    /// Whether something exists at `path` (without following a dangling link into an error).
    public static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }
}

extension FileBytes {
    /// The names in a directory (without `.` and `..`); empty when it cannot be read.
    public static func directoryEntries(_ path: String) -> [String] {
        guard let dir = opendir(path) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Who files root makes in `directory` for another user should belong to: the directory's
    /// owner and group when this process is root and the directory belongs to someone else (the
    /// daemon's user's state directory, written by root with the daemon stopped); `nil` otherwise.
    public static func ownerForRootWrites(in directory: String) -> (uid_t, gid_t)? {
        var info = stat()
        guard geteuid() == 0, stat(directory, &info) == 0, info.st_uid != 0 else { return nil }
        return (info.st_uid, info.st_gid)
    }

    /// Creates `path` and its missing parents with `mode`. A refusal (`EACCES`, `EPERM`) says what to
    /// do after the system's reason when `whenRefused` is given.
    public static func makeDirectories(_ path: String, mode: mode_t = 0o755, whenRefused: String? = nil)
        throws(SystemError)
    {
        var prefix = ""
        for component in path.split(separator: "/") {
            prefix += "/" + component
            guard mkdir(prefix, mode) != 0, errno != EEXIST else { continue }
            let code = errno
            if let whenRefused, code == EACCES || code == EPERM {
                throw SystemError(
                    "mkdir \(prefix)", reason: String(cString: strerror(code)) + "; " + whenRefused, errno: code)
            }
            throw SystemError("mkdir \(prefix)", errno: code)
        }
    }

    /// What to do when the daemon may not create one of its directories (started by hand, in a
    /// container or chroot, without systemd making it first).
    public static func createItHint(_ path: String) -> String {
        "create it as root for the daemon's user (install -d -o rcagent -g rcagent -m 0755 \(path)) "
            + "or run systemd-tmpfiles --create"
    }
}
