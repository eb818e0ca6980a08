import Foundation
import Glibc
import TestSupport
import Testing

/// rcagentd started by hand as its user, without systemd creating its directories first (a
/// container, a chroot, a test rig): a directory it may not create is an error that says what to do.
@Suite struct RunWithoutSystemdTests {
    @Test(.enabled(if: getuid() == 0, "needs root to run the daemon as another user"))
    func aSocketDirectoryItMayNotCreateSaysHowToMakeIt() throws {
        let sandbox = try Sandbox()
        // The state directory is the user's (as the package's tmpfiles.d makes it); the socket's
        // directory is to go in a root-owned 0755 directory, as /run/rcagent in /run.
        try FileManager.default.createDirectory(atPath: sandbox.statePath, withIntermediateDirectories: true)
        chown(sandbox.statePath, 65534, 65534)
        let run = sandbox.root.appendingPathComponent("run")
        try FileManager.default.createDirectory(at: run, withIntermediateDirectories: true)
        for path in [sandbox.root.path, run.path] { chmod(path, 0o755) }
        for path in [sandbox.configPath, sandbox.defaultsPath] { chmod(path, 0o644) }
        let socketDirectory = run.appendingPathComponent("rcagent").path
        try sandbox.writeConfig(extra: "[Agent]\nSocket=\(socketDirectory)/agent.sock\n")
        chmod(sandbox.configPath, 0o644)
        let result = try sandbox.run(
            "/usr/bin/setpriv",
            [
                "--reuid=65534", "--regid=65534", "--clear-groups", Binaries.url("rcagentd").path, "--config",
                sandbox.configPath,
            ])
        #expect(result.status != 0)
        #expect(
            result.stderr.contains(
                "mkdir \(socketDirectory): Permission denied; create it as root for the daemon's user "
                    + "(install -d -o rcagent -g rcagent -m 0755 \(socketDirectory)) or run systemd-tmpfiles --create"),
            "\(result.stderr)")
    }

    /// root running the daemon with a socket directory its user owns (the package's /run/rcagent):
    /// the warning's advice is to run as that user, not to move to the directory it is in.
    @Test(.enabled(if: getuid() == 0, "needs root to own a directory as another user"))
    func rootInTheDaemonUsersDirectoryIsToldToRunAsThatUser() throws {
        let sandbox = try Sandbox()
        let socketDirectory = sandbox.root.appendingPathComponent("run-rcagent").path
        try FileManager.default.createDirectory(atPath: socketDirectory, withIntermediateDirectories: true)
        chmod(socketDirectory, 0o755)
        chown(socketDirectory, 65534, 65534)
        try sandbox.writeConfig(extra: "[Agent]\nSocket=\(socketDirectory)/agent.sock\n")
        let daemon = try sandbox.startDaemon()
        #expect(daemon.stop() == 0)
        #expect(
            daemon.log.contains(
                "The socket directory \(socketDirectory) can be written by its owner, uid 65534 (mode 755): they can "
                    + "remove the socket or put another in its place; run the daemon as the directory's owner "
                    + "(the package's unit runs it as rcagent), or use a directory only this user can write"),
            "\(daemon.log)")
    }
}
