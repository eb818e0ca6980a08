import Foundation
import RCCore
import TestSupport

/// Tests/Fixtures/hostile_google.py as a real process on loopback: an endpoint that answers every
/// request as its mode file says (any status, raw headers, gzip bombs), for the answers a broken or
/// compromised server could give. It lives in its own subdirectory, so it can run beside FakeGoogle.
final class HostileGoogle {
    let directory: String
    let port: Int
    private let process = Process()

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/hostile_google.py").path

    init(in parent: TemporaryDirectory, name: String = "hostile", mode: JSONValue = .object([])) throws {
        directory = parent.file(name)
        guard mkdir(directory, 0o700) == 0 else { throw TestFailure("mkdir \(directory) failed") }
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [Self.script, directory]
        let out = Pipe()
        process.standardOutput = out
        try FileBytes.writeAtomically(directory + "/mode.json", Array(mode.compactText.utf8))
        try process.run()
        // The server prints its port once it listens: the one event to wait for.
        var line: [UInt8] = []
        while let byte = try out.fileHandleForReading.read(upToCount: 1)?.first, byte != 0x0a { line.append(byte) }
        guard let port = Int(String(decoding: line, as: UTF8.self)) else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw TestFailure("the hostile server did not start")
        }
        self.port = port
    }

    deinit {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    var origin: String { "http://127.0.0.1:\(port)" }

    /// Every request so far, oldest first: method, path, headers, body.
    var requests: [JSONValue] {
        let bytes = (try? FileBytes.read(directory + "/requests.log")) ?? nil
        return (bytes ?? []).split(separator: 0x0a).compactMap { try? JSONValue.parse($0) }
    }
}
