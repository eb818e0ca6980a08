#if canImport(Glibc)
    import Glibc
#endif

/// An operating-system error with the call that failed (`open /x: No such file or directory`).
public struct SystemError: Error, CustomStringConvertible, Sendable {
    public let operation: String
    public let errno: Int32

    public init(_ operation: String, errno: Int32 = Glibc.errno) {
        self.operation = operation
        self.errno = errno
    }

    public var description: String { "\(operation): \(String(cString: strerror(errno)))" }
}

/// Whole-file reads and durable whole-file writes with plain POSIX calls (no Foundation needed).
public enum FileBytes {
    /// The file's bytes, or `nil` when it does not exist. Files over `limit` bytes are an error.
    public static func read(_ path: String, limit: Int = 64 << 20) throws(SystemError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw SystemError("open \(path)")
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw SystemError("read \(path)")
            }
            if n == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<n])
            if bytes.count > limit { throw SystemError("read \(path) (larger than \(limit) bytes)", errno: EFBIG) }
        }
    }

    /// Replaces `path` with `bytes` so that a crash leaves either the old or the new file:
    /// write a temporary file beside it, fsync it, rename it over, then fsync the directory
    /// so the rename itself is durable.
    public static func writeAtomically(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o644) throws(SystemError) {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        if fd < 0 { throw SystemError("open \(temporary)") }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
            if n < 0 {
                if errno == EINTR { continue }
                let error = SystemError("write \(temporary)")
                close(fd)
                throw error
            }
            written += n
        }
        if fsync(fd) != 0 {
            let error = SystemError("fsync \(temporary)")
            close(fd)
            throw error
        }
        close(fd)
        if rename(temporary, path) != 0 { throw SystemError("rename \(temporary)") }
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        let dirfd = open(directory.isEmpty ? "/" : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirfd >= 0 {
            fsync(dirfd)
            close(dirfd)
        }
    }
}

extension FileBytes {
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

    /// Creates `path` and its missing parents with `mode`.
    public static func makeDirectories(_ path: String, mode: mode_t = 0o755) throws(SystemError) {
        var prefix = ""
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, mode) != 0 && errno != EEXIST { throw SystemError("mkdir \(prefix)") }
        }
    }
}
