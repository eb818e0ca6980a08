#if canImport(Glibc)
    import Glibc
#endif

/// Who can change a file or directory besides root and the users trusted with it: the question
/// asked of the socket's and the state's directories and of the trusted keys.
public enum FileWriters {
    /// Who besides root and `trusted` (this process's effective user) can write what `info`
    /// describes, said for a message (`nil`: nobody).
    public static func others(_ info: stat, trusting trusted: [uid_t] = [geteuid()]) -> String? {
        let mode = String(info.st_mode & 0o7777, radix: 8)
        if info.st_uid != 0 && !trusted.contains(info.st_uid) { return "its owner, uid \(info.st_uid) (mode \(mode))" }
        if info.st_mode & S_IWOTH != 0 { return "every user (mode \(mode))" }
        if info.st_mode & S_IWGRP != 0 { return "group \(info.st_gid) (mode \(mode))" }
        return nil
    }
}
