import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#endif

/// A directory of its own for one test (tests run in parallel), removed when the test ends.
struct TemporaryDirectory {
    let path: String

    /// Runs `body` with a fresh directory and removes it afterwards, whatever `body` does.
    static func with<T>(_ body: (TemporaryDirectory) throws -> T) throws -> T {
        var template = Array("/tmp/rcagent-core-tests.XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else { throw TestFailure("mkdtemp failed: errno \(errno)") }
        let directory = TemporaryDirectory(path: String(cString: created))
        defer { try? FileManager.default.removeItem(atPath: directory.path) }
        return try body(directory)
    }

    /// The absolute path of `name` inside the directory.
    func file(_ name: String) -> String { path + "/" + name }

    /// Writes `text` to `name` (creating parent directories) and returns its path.
    @discardableResult
    func write(_ name: String, _ text: String) throws -> String {
        try write(name, bytes: Array(text.utf8))
    }

    /// The bytes of `name`.
    func read(_ name: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: file(name)) else {
            throw TestFailure("cannot read \(name)")
        }
        return Array(data)
    }

    @discardableResult
    func write(_ name: String, bytes: [UInt8]) throws -> String {
        let target = file(name)
        let parent = String(target[..<target.lastIndex(of: "/")!])
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        guard FileManager.default.createFile(atPath: target, contents: Data(bytes)) else {
            throw TestFailure("cannot create \(target)")
        }
        return target
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
