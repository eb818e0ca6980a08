import Foundation
import TestSupport
import Testing

/// Locates the built executables: they sit beside the test bundle in the build directory.
enum Binaries {
    static let directory: URL = {
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return exe.deletingLastPathComponent()
    }()

    /// `rcagentd` is `rcagent` called by that name (one executable, as packaged): the link beside it,
    /// made on first use, so the daemon's tests run it the way the package installs it.
    static func url(_ name: String) -> URL {
        if name == "rcagentd" { _ = daemonLink }
        return directory.appendingPathComponent(name)
    }

    /// Made under a name of its own and renamed into place: parallel test processes, and a stale
    /// `rcagentd` executable from a build before the programs were one, never see a half-made link.
    private static let daemonLink: Void = {
        let temporary = directory.appendingPathComponent(".rcagentd-\(getpid())").path
        unlink(temporary)
        if symlink("rcagent", temporary) == 0 {
            rename(temporary, directory.appendingPathComponent("rcagentd").path)
        }
    }()
}

/// A private directory with an agent config, defaults and a file source, torn down at deinit.
/// Each test owns one, so tests run in parallel without sharing paths.
final class Sandbox {
    let root: URL
    var configPath: String { root.appendingPathComponent("agent.conf").path }
    var statePath: String { root.appendingPathComponent("state").path }
    var databasePath: String { statePath + "/state.db" }
    var socketPath: String { root.appendingPathComponent("agent.sock").path }
    var remotePath: String { root.appendingPathComponent("remote.json").path }
    var defaultsPath: String { root.appendingPathComponent("defaults.json").path }

    init(defaults: String = #"{"greeting": "hello", "enabled": "yes", "count": 3}"#, extraConfig: String = "") throws {
        // Short path: Unix socket paths are limited to 107 bytes.
        root = URL(fileURLWithPath: "/tmp").appendingPathComponent("rca-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try defaults.write(toFile: defaultsPath, atomically: true, encoding: .utf8)
        try writeConfig(extra: extraConfig)
    }

    func writeConfig(extra: String = "") throws {
        let config = """
            [Agent]
            StateDirectory=\(statePath)
            Socket=\(socketPath)
            SocketGroup=
            Defaults=\(defaultsPath)

            [Source]
            Type=file
            Path=\(remotePath)
            \(extra)
            """
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
    }

    func write(_ text: String, to path: String) throws {
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    deinit {
        try? FileManager.default.removeItem(at: root)
    }

    /// Runs the `rcagent` CLI against this sandbox's config and waits for it.
    @discardableResult
    func cli(_ arguments: String...) throws -> ProcessResult {
        try run("rcagent", arguments + ["--config", configPath])
    }

    func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> ProcessResult {
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "RCAGENT_CONFIG")
        env.merge(environment) { $1 }
        return try runProcess(
            executable.hasPrefix("/") ? executable : Binaries.url(executable).path, arguments, environment: env)
    }
}
