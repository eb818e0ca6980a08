import Foundation
import Glibc
import TestSupport
import Testing

/// Readers the daemon does not trust (issue 25, item 5): a read transaction held open on state.db
/// stopped every checkpoint and grew the WAL without bound. The database is now private (0640) and
/// everyone else reads `reader.db`, replaced by rename after each change.
@Suite(.serialized) struct SecurityReaderFileTests {
    static let nobody: UInt32 = 65534

    /// A running daemon on a file source, its sandbox reachable by `nobody` (who is not in its group).
    func sandbox() throws -> (Sandbox, DaemonProcess) {
        let sandbox = try Sandbox(defaults: #"{"only_default": "d"}"#)
        try sandbox.publish(Sandbox.document(version: 1))
        let daemon = try sandbox.startDaemon()
        try #require(try sandbox.cli("fetch", "--wait").status == 0)
        chmod(sandbox.root.path, 0o755)
        for path in [sandbox.configPath, sandbox.defaultsPath] { chmod(path, 0o644) }
        return (sandbox, daemon)
    }

    func asNobody(_ sandbox: Sandbox, _ arguments: String...) throws -> ProcessResult {
        try sandbox.run(
            "/usr/bin/setpriv",
            ["--reuid=\(Self.nobody)", "--regid=\(Self.nobody)", "--clear-groups", Binaries.url("rcagent").path]
                + arguments + ["--config", sandbox.configPath])
    }

    func walSize(_ sandbox: Sandbox) -> Int {
        var info = stat()
        return stat(sandbox.databasePath + "-wal", &info) == 0 ? Int(info.st_size) : 0
    }

    /// `nobody` opens what it can, as any SQLite program would (python's sqlite3), and holds a read
    /// transaction on it while the daemon activates 120 documents of 400 keys: the WAL stays under
    /// SQLite's checkpoint threshold (1,000 pages) plus one transaction, and `nobody`'s `get` sees
    /// every new version. With state.db readable (the old mode), the same run grows the WAL past it.
    @Test(.enabled(if: getuid() == 0, "needs root to run a reader as another user"))
    func anUntrustedReaderHoldingATransactionCannotGrowTheWAL() throws {
        let (sandbox, daemon) = try sandbox()
        defer { _ = daemon.stop() }
        let holder = try TransactionHolder(
            asUser: Self.nobody, paths: [sandbox.databasePath, sandbox.statePath + "/reader.db"])
        defer { holder.stop() }
        #expect(holder.report[sandbox.databasePath]?.hasPrefix("denied") == true, "\(holder.report)")
        #expect(holder.report[sandbox.statePath + "/reader.db"] == "holding", "\(holder.report)")

        let bound = 1_000 * 4_096 + 512 * 1_024
        var largest = 0
        for version in 2...121 {
            try sandbox.publish(Sandbox.document(version: version, keys: 400))
            let fetch = try sandbox.cli("fetch", "--wait")
            try #require(fetch.status == 0, "\(fetch.stdout)\(fetch.stderr)")
            largest = max(largest, walSize(sandbox))
            if version % 20 == 1 {
                let get = try asNobody(sandbox, "get", "key_399")
                #expect(get.stdout == "v\(version)\n" && get.stderr.isEmpty, "\(get.stdout)\(get.stderr)")
            }
        }
        #expect(largest > 0 && largest < bound, "the WAL reached \(largest) bytes")
        // The holder still reads its own, older file: whole, and unchanged under it.
        #expect(holder.stillConsistent())
    }

    /// What `nobody` reads from the reader file: the real values and status, with no warning; and
    /// the state database itself is closed to it.
    @Test(.enabled(if: getuid() == 0, "needs root to run a reader as another user"))
    func anUntrustedReaderReadsTheReaderFileAndNotTheDatabase() throws {
        let (sandbox, daemon) = try sandbox()
        defer { _ = daemon.stop() }
        var info = stat()
        #expect(stat(sandbox.databasePath, &info) == 0 && info.st_mode & 0o777 == 0o640)
        #expect(stat(sandbox.statePath + "/reader.db", &info) == 0 && info.st_mode & 0o777 == 0o644)
        let get = try asNobody(sandbox, "get", "key_0", "--json")
        #expect(get.stdout == #"{"key":"key_0","value":"v1","source":"remote"}"# + "\n", "\(get.stderr)")
        #expect(get.stderr.isEmpty)
        let list = try asNobody(sandbox, "list")
        #expect(list.stdout.contains("only_default\tdefault\td"), "\(list.stdout)")
        let status = try asNobody(sandbox, "status", "--json")
        let json = try #require(JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        let active = try #require(json["active"] as? [String: Any])
        #expect(active["templateVersion"] as? String == "1" && active["keys"] as? Int == 3, "\(json)")
        #expect((json["database"] as? [String: Any])?["problem"] is NSNull, "\(json)")
        let doctor = try asNobody(sandbox, "doctor", "--json")
        #expect(doctor.stdout.contains(#""check":"database","ok":true"#), "\(doctor.stdout)")
        #expect(doctor.stdout.contains("is private to the daemon"), "\(doctor.stdout)")
        // With the daemon down, nobody still reads the last state; mark-stale, written by the
        // daemon's user (here root) into the database, reaches nobody through the reader file.
        #expect(daemon.stop() == 0)
        #expect(try sandbox.cli("mark-stale", "--reason", "offline").status == 0)
        let stale = try asNobody(sandbox, "status")
        #expect(stale.stdout.contains("stale:        yes"), "\(stale.stdout)")
        #expect(try asNobody(sandbox, "get", "key_0").stdout == "v1\n")
    }

    /// A reader file that is damaged is said, and readers fall back as before: to the database for
    /// whoever may read it, to the defaults file (with a warning) for everyone else.
    @Test(.enabled(if: getuid() == 0, "needs root to run a reader as another user"))
    func aDamagedReaderFileIsSaidAndFallenBackFrom() throws {
        let (sandbox, daemon) = try sandbox()
        #expect(daemon.stop() == 0)
        let reader = sandbox.statePath + "/reader.db"
        try Data(repeating: 0x5a, count: 4096).write(to: URL(fileURLWithPath: reader))
        chmod(reader, 0o644)
        let owner = try sandbox.cli("get", "key_0")
        #expect(owner.stdout == "v1\n", "\(owner.stderr)")
        let other = try asNobody(sandbox, "get", "only_default")
        #expect(other.stdout == "d\n")
        #expect(other.stderr.contains("Warning: cannot read \(reader)"), "\(other.stderr)")
        #expect(other.stderr.contains("Warning: cannot read \(sandbox.databasePath)"), "\(other.stderr)")
    }
}

/// A python3 process as another user that opens each path with SQLite, runs `BEGIN; SELECT` on it
/// and keeps the transaction open until stopped; it reports, per path, `holding` or why it could not.
private final class TransactionHolder {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private(set) var report: [String: String] = [:]

    static let script = """
        import json, sqlite3, sys
        held, report = {}, {}
        for path in sys.argv[1:]:
            try:
                db = sqlite3.connect(path, isolation_level=None)
                db.execute("BEGIN")
                rows = db.execute("SELECT key, value FROM active_values ORDER BY key").fetchall()
                held[path] = (db, rows)
                report[path] = "holding"
            except Exception as error:
                report[path] = "denied: %s" % error
        print(json.dumps(report), flush=True)
        sys.stdin.readline()
        same = all(db.execute("SELECT key, value FROM active_values ORDER BY key").fetchall() == rows
                   for db, rows in held.values())
        print("consistent" if same else "changed", flush=True)
        sys.stdin.readline()
        """

    init(asUser uid: UInt32, paths: [String]) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments =
            ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "/usr/bin/python3", "-c", Self.script]
            + paths
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        let line = try #require(readLine(), "the holder did not report")
        report = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String])
    }

    private var buffer = Data()

    private func readLine() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...newline)
                return line
            }
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { return nil }
            buffer.append(data)
        }
    }

    /// Reads again inside the transaction still open: the same rows as at its start.
    func stillConsistent() -> Bool {
        input.fileHandleForWriting.write(Data("check\n".utf8))
        return readLine() == "consistent"
    }

    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}
