import Foundation
import TestSupport
import Testing

/// rcagent and rcagentd are one executable (issue 20): the name it is called by chooses the program,
/// and the libraries only some features need (libcurl, libmosquitto, libcrypto, libpcre2) are loaded
/// when a configured feature first uses them (libsystemd not at all), so `rcagent get` starts without them and a
/// device without an optional one runs every other feature and names the one a feature lacks.
@Suite struct OneExecutableTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures")

    /// Links to the built `rcagent` under other names, in `directory`.
    static func link(_ name: String, in directory: String) throws -> String {
        let path = directory + "/" + name
        guard symlink(Binaries.url("rcagent").path, path) == 0 else {
            throw TestFailure("symlink \(path): errno \(errno)")
        }
        return path
    }

    @Test func theNameItIsCalledByChoosesTheProgram() throws {
        try TemporaryDirectory.with { directory in
            let version = try runProcess(Binaries.url("rcagent").path, ["--version"])
            #expect(version.status == 0)
            #expect(version.stdout.hasPrefix("rcagent "))
            let number = version.stdout.dropFirst("rcagent ".count)

            let daemon = try runProcess(try Self.link("rcagentd", in: directory.path), ["--version"])
            #expect(daemon.status == 0)
            #expect(daemon.stdout == "rcagentd " + number)
            let daemonHelp = try runProcess(directory.path + "/rcagentd", ["--help"])
            #expect(daemonHelp.stdout.contains("--config"))
            #expect(!daemonHelp.stdout.contains("mark-stale"))

            // Only the exact name runs the daemon: anything else is the CLI, whose usage lists its commands.
            for name in ["rcagent", "rcagentd-old", "my-rcagentd.sh", "RCAGENTD"] {
                let other = try runProcess(try Self.link(name, in: directory.path), ["--help"])
                #expect(other.status == 0, "\(name)")
                #expect(other.stdout.contains("mark-stale"), "\(name): \(other.stdout)")
            }
            // The path before the name does not count.
            let nested = directory.path + "/rcagentd-dir"
            try FileManager.default.createDirectory(atPath: nested, withIntermediateDirectories: false)
            let cli = try runProcess(try Self.link("rcagent", in: nested), ["--version"])
            #expect(cli.stdout == version.stdout)
        }
    }

    /// What the loader loads while `rcagent get` runs, from the loader itself (LD_DEBUG=files lists
    /// every object it loads, at start-up or by dlopen later); the daemon, on a file source, the same
    /// from its /proc/PID/maps.
    @Test func theCLIAndAFileSourceDaemonLoadNoOptionalLibrary() throws {
        let optional = ["libcurl", "libmosquitto", "libcrypto", "libpcre2", "libsystemd"]
        let sandbox = try Sandbox()
        try sandbox.write(
            #"{"state": "UPDATE", "templateVersion": "1", "entries": {"greeting": "hi"}}"#, to: sandbox.remotePath)
        let daemon = try Subprocess(Binaries.url("rcagentd").path, ["--config", sandbox.configPath])
        defer {
            kill(daemon.pid, SIGTERM)
            _ = daemon.finish(bound: .seconds(60))
        }
        #expect(eventually(60) { (try? sandbox.cli("get", "greeting"))?.stdout == "hi\n" })
        // Read by cat: /proc files have no size for Foundation to read up to.
        let maps = try runProcess("/bin/cat", ["/proc/\(daemon.pid)/maps"]).stdout
        #expect(maps.contains("libsqlite3"), "the maps of a daemon that serves: \(maps.prefix(400))")
        for library in optional { #expect(!maps.contains(library), "the daemon maps \(library)") }

        var environment = ProcessInfo.processInfo.environment
        environment["LD_DEBUG"] = "files"
        let get = try runProcess(
            Binaries.url("rcagent").path, ["get", "greeting", "--config", sandbox.configPath], environment: environment)
        #expect(get.stdout == "hi\n")
        let loaded = get.stderr.split(separator: "\n").filter { $0.contains("file=") }
        #expect(
            loaded.contains { $0.contains("libsqlite3") }, "LD_DEBUG lists the loaded files: \(get.stderr.prefix(400))")
        for library in optional { #expect(!loaded.contains { $0.contains(library) }, "rcagent get loads \(library)") }
    }

    /// A device with only the package's Depends installed (Tests/Fixtures/clean_root.sh: the program and
    /// libpcre2 and libcrypto with what they need, no libcurl or libmosquitto), as a chroot
    /// with its own /proc in a mount namespace of its own. Needs root.
    @Test(.enabled(if: getuid() == 0, "needs root for chroot")) func aDeviceWithoutTheRecommendedLibraries() throws {
        try TemporaryDirectory.with { directory in
            let root = directory.path + "/root"
            let made = try runProcess(
                "/bin/sh",
                [
                    Self.fixtures.appendingPathComponent("clean_root.sh").path, root, Binaries.url("rcagent").path,
                    "libpcre2-8.so.0", "libcrypto.so.3",
                ])
            try #require(made.status == 0, "\(made.stderr)")
            #expect(!FileManager.default.fileExists(atPath: root + "/lib/x86_64-linux-gnu/libmosquitto.so.1"))
            try FileManager.default.createDirectory(atPath: root + "/proc", withIntermediateDirectories: false)
            try FileManager.default.createDirectory(atPath: root + "/etc/rc", withIntermediateDirectories: true)
            func config(_ name: String, _ extra: String) throws {
                let text = """
                    [Agent]
                    StateDirectory=/tmp/\(name)
                    Socket=/tmp/\(name).sock
                    SocketGroup=
                    Defaults=/etc/rc/defaults.json
                    \(extra)
                    """
                try text.write(toFile: root + "/etc/rc/\(name).conf", atomically: true, encoding: .utf8)
            }
            try #"{"greeting": "hello"}"#.write(
                toFile: root + "/etc/rc/defaults.json", atomically: true, encoding: .utf8)
            try #"{"state": "UPDATE", "templateVersion": "1", "entries": {"greeting": "from the file"}}"#.write(
                toFile: root + "/etc/rc/remote.json", atomically: true, encoding: .utf8)
            try config("file", "[Source]\nType=file\nPath=/etc/rc/remote.json")
            try config("mqtt", "[Source]\nType=file\nPath=/etc/rc/remote.json\n[Push]\nMQTT=mqtt://127.0.0.1:1")
            try config("http", "[Source]\nType=http\nURL=http://127.0.0.1:1/config.json")
            // The program in the clean root, /proc mounted for it in a namespace that ends with it.
            let inRoot = [
                "--mount", "--fork", "--kill-child=SIGTERM", "/bin/sh", "-c",
                #"mount -t proc proc "$0/proc" && exec chroot "$0" "$@""#, root,
            ]
            func run(_ arguments: String...) throws -> ProcessResult {
                try runProcess("/usr/bin/unshare", inRoot + arguments)
            }

            // MQTT configured: the daemon does not start, and says what is missing and for what.
            let mqtt = try run("/usr/bin/rcagentd", "--config", "/etc/rc/mqtt.conf")
            #expect(mqtt.status == 1)
            #expect(mqtt.stderr.contains("MQTT needs libmosquitto.so.1"), "\(mqtt.stderr)")
            #expect(mqtt.stderr.contains("apt install libmosquitto1"), "\(mqtt.stderr)")

            // A file source: serves.
            let file = try Subprocess(
                "/usr/bin/unshare", inRoot + ["/usr/bin/rcagentd", "--config", "/etc/rc/file.conf"])
            #expect(
                eventually(60) {
                    (try? run("/usr/bin/rcagent", "get", "greeting", "--config", "/etc/rc/file.conf"))?.stdout
                        == "from the file\n"
                })
            kill(file.pid, SIGTERM)
            let fileRun = file.finish(bound: .seconds(60))
            #expect(!fileRun.stderr.contains("needs lib"), "\(fileRun.stderr)")

            // An http source: the daemon runs on its defaults, and the failed fetch names libcurl.
            let http = try Subprocess(
                "/usr/bin/unshare", inRoot + ["/usr/bin/rcagentd", "--config", "/etc/rc/http.conf"])
            var status = ""
            #expect(
                eventually(60) {
                    status =
                        (try? run("/usr/bin/rcagent", "status", "--json", "--config", "/etc/rc/http.conf"))?.stdout
                        ?? ""
                    return status.contains("HTTP needs libcurl.so.4")
                }, "\(status)")
            #expect(
                (try run("/usr/bin/rcagent", "get", "greeting", "--config", "/etc/rc/http.conf")).stdout == "hello\n")
            kill(http.pid, SIGTERM)
            _ = http.finish(bound: .seconds(60))
        }
    }
}
