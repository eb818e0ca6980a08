import RCCore
import RCSystem

#if canImport(Glibc)
    import Glibc
#endif

/// `rcfuzz`: replays files through a fuzz target (a crash found by `make fuzz`, or the seed corpus).
public enum FuzzReplayer {
    static let usage = """
        usage: rcfuzz --list
               rcfuzz TARGET FILE_OR_DIRECTORY...
        Runs each file (each file of a directory, recursively) through TARGET and checks its properties.
        """

    /// Runs the command line (without the program name) and returns the exit status: 0 when every
    /// input held every property, 1 when one broke a property, 64 on a usage error.
    public static func main(arguments: [String]) -> Int32 {
        if arguments == ["--list"] {
            for target in FuzzTargets.all { print("\(target.name.padding(20))\(target.summary)") }
            return 0
        }
        if arguments == ["--help"] || arguments == ["-h"] {
            print(usage)
            return 0
        }
        guard arguments.count >= 2 else { return usageError("expected a target and at least one file") }
        guard let target = FuzzTargets.named(arguments[0]) else {
            return usageError("unknown target '\(arguments[0])' (rcfuzz --list shows them)")
        }
        var files: [String] = []
        for path in arguments.dropFirst() {
            guard let found = regularFiles(at: path) else {
                writeError("Error: cannot read \(path)\n")
                return 1
            }
            files += found
        }
        var counts: [FuzzOutcome: Int] = [:]
        var violations = 0
        for file in files {
            // Named before it runs: if the parser crashes, the last line says on what.
            writeError("Running \(target.name) on \(file)\n")
            guard let bytes = try? FileBytes.read(file, limit: 64 << 20) else {
                writeError("Error: cannot read \(file)\n")
                return 1
            }
            do {
                let outcome = try target.run(bytes)
                counts[outcome, default: 0] += 1
                print("\(outcome == .accepted ? "accepted" : "rejected")  \(file)")
            } catch {
                violations += 1
                print("VIOLATED  \(file): \(error)")
            }
        }
        print(
            "\(target.name): \(files.count) input(s), \(counts[.accepted, default: 0]) accepted, "
                + "\(counts[.rejected, default: 0]) rejected, \(violations) property violation(s)")
        return violations == 0 ? 0 : 1
    }

    private static func usageError(_ message: String) -> Int32 {
        writeError("Error: \(message)\n\(usage)\n")
        return 64
    }

    /// The regular files at `path`: itself, or those under it (sorted, hidden names skipped).
    static func regularFiles(at path: String) -> [String]? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        guard (info.st_mode & S_IFMT) == S_IFDIR else { return [path] }
        var files: [String] = []
        for name in FileBytes.directoryEntries(path).sorted() where !name.hasPrefix(".") {
            files += regularFiles(at: path + "/" + name) ?? []
        }
        return files
    }

    static func writeError(_ text: String) {
        var text = text
        text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
    }
}

extension String {
    fileprivate func padding(_ width: Int) -> String {
        count >= width ? self + " " : self + String(repeating: " ", count: width - count)
    }
}
