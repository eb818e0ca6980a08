import Foundation
import RCCore
import RCSystem
import TestSupport

/// Tests/Fixtures/hostile_google.py as a real process on loopback: an endpoint that answers every
/// request as its mode file says (any status, raw headers, gzip bombs), for the answers a broken or
/// compromised server could give. It lives in its own subdirectory, so it can run beside FakeGoogle.
final class HostileGoogle {
    let directory: String
    let port: Int
    private let server: FixtureProcess

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/hostile_google.py").path

    init(in parent: TemporaryDirectory, name: String = "hostile", mode: JSONValue = .object([])) throws {
        directory = parent.file(name)
        guard mkdir(directory, 0o700) == 0 else { throw TestFailure("mkdir \(directory) failed") }
        try FileBytes.writeAtomically(directory + "/mode.json", Array(mode.compactText.utf8))
        server = try FixtureProcess(["/usr/bin/python3", Self.script, directory], name: "the hostile server")
        port = server.port
    }

    var origin: String { "http://127.0.0.1:\(port)" }

    /// Every request so far, oldest first: method, path, headers, body.
    var requests: [JSONValue] {
        let bytes = (try? FileBytes.read(directory + "/requests.log")) ?? nil
        return (bytes ?? []).split(separator: 0x0a).compactMap { try? JSONValue.parse($0) }
    }
}
