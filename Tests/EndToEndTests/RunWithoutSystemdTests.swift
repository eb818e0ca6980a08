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
}
