import Glibc
import RCCore
import RCSystem
import TestSupport
import Testing

@testable import RCStore

/// root writing for the daemon's user (`rcagent mark-stale` with the daemon stopped) writes the
/// reader file as that user: the state directory is that user's, and a symbolic link it put at a
/// temporary name or at `reader.db` must not make root create or write the file it names.
@Suite struct ReaderFileOwnerTests {
    static let nobody: (uid_t, gid_t) = (65_534, 65_534)

    private func owner(_ path: String) -> uid_t? {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_uid : nil
    }

    @Test(.enabled(if: geteuid() == 0, "needs root to write for another user"))
    func rootWritesTheReaderFileAsTheDirectoryOwner() throws {
        try TemporaryDirectory.with { dir in
            #expect(chmod(dir.path, 0o755) == 0)
            let state = dir.file("state")
            #expect(mkdir(state, 0o755) == 0 && chown(state, Self.nobody.0, Self.nobody.1) == 0)
            let store = try StateStore.openForWriting(path: state + "/state.db", owner: Self.nobody)
            store.maintainReaderFile(at: state + "/reader.db") { Issue.record("reader file not written: \($0)") }
            try store.markStale(reason: "offline", at: .now())
            // Created with the owner's file-system ids, not root's (then chowned or not).
            #expect(owner(state + "/reader.db") == Self.nobody.0)
            #expect(try StateStore.openReaderFile(path: state + "/reader.db")?.status().stale.isSet == true)

            // A link the directory's owner planted at reader.db: root's touch would follow it (and
            // a rebuild rename over it); as the owner, a root-only file stays untouched.
            let target = dir.file("root-only")
            #expect(FileBytes.exists(target) == false)
            let fd = open(target, O_CREAT | O_WRONLY, 0o600)
            #expect(fd >= 0)
            close(fd)
            var old = [timespec(tv_sec: 1_000, tv_nsec: 0), timespec(tv_sec: 1_000, tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, target, &old, 0) == 0)
            #expect(unlink(state + "/reader.db") == 0 && symlink(target, state + "/reader.db") == 0)
            store.touchReaderFile()
            var after = stat()
            _ = stat(target, &after)
            #expect(after.st_mtim.tv_sec == 1_000, "root touched the file the link names")
            // The thread's ids are root's again.
            let mine = open(dir.file("mine"), O_CREAT | O_WRONLY | O_EXCL, 0o600)
            #expect(mine >= 0)
            close(mine)
            #expect(owner(dir.file("mine")) == 0)
        }
    }
}
