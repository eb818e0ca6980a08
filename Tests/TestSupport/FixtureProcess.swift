import Foundation
import Glibc

/// A test fixture server (a Python script under Tests/Fixtures) as a real process: started with
/// `command`, its port read from the first line it prints once it listens (the one event to wait
/// for), and killed with SIGKILL at deinit (a SIGTERM ignored by the test runner would be ignored
/// by the child too).
public final class FixtureProcess {
    private let process = Process()
    public let port: Int

    /// `name`: what the error says did not start.
    public init(_ command: [String], name: String) throws {
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        var line = Data()
        while let byte = try out.fileHandleForReading.read(upToCount: 1), !byte.isEmpty, byte != Data([0x0a]) {
            line.append(byte)
        }
        guard let port = Int(String(decoding: line, as: UTF8.self)) else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw TestFailure("\(name) did not start")
        }
        self.port = port
    }

    deinit {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
