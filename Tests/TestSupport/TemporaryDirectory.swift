import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#endif

/// Shared by the unit suites. A directory of its own for one test (tests run in parallel), removed when the test ends.
public struct TemporaryDirectory: Sendable {
    public let path: String

    /// Runs `body` with a fresh directory and removes it afterwards, whatever `body` does.
    public static func with<T>(_ body: (TemporaryDirectory) throws -> T) throws -> T {
        var template = Array("/tmp/rcagent-tests.XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else { throw TestFailure("mkdtemp failed: errno \(errno)") }
        let directory = TemporaryDirectory(path: String(cString: created))
        defer { try? FileManager.default.removeItem(atPath: directory.path) }
        return try body(directory)
    }

    /// The same for an async `body` (the agent's component tests run its loop).
    public static func with<T>(_ body: (TemporaryDirectory) async throws -> T) async throws -> T {
        var template = Array("/tmp/rcagent-tests.XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else { throw TestFailure("mkdtemp failed: errno \(errno)") }
        let directory = TemporaryDirectory(path: String(cString: created))
        defer { try? FileManager.default.removeItem(atPath: directory.path) }
        return try await body(directory)
    }

    /// The absolute path of `name` inside the directory.
    public func file(_ name: String) -> String { path + "/" + name }

    /// Writes `text` to `name` (creating parent directories) and returns its path.
    @discardableResult
    public func write(_ name: String, _ text: String) throws -> String {
        try write(name, bytes: Array(text.utf8))
    }

    /// The bytes of `name`.
    public func read(_ name: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: file(name)) else {
            throw TestFailure("cannot read \(name)")
        }
        return Array(data)
    }

    @discardableResult
    public func write(_ name: String, bytes: [UInt8]) throws -> String {
        let target = file(name)
        let parent = String(target[..<target.lastIndex(of: "/")!])
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        guard FileManager.default.createFile(atPath: target, contents: Data(bytes)) else {
            throw TestFailure("cannot create \(target)")
        }
        return target
    }
}

public struct TestFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Whether anything exists at `path`.
public func pathExists(_ path: String) -> Bool {
    var info = stat()
    return lstat(path, &info) == 0
}
