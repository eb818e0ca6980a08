#if canImport(Glibc)
    import Glibc
#endif

/// The process environment as a dictionary (read from `environ`: no ProcessInfo needed).
public enum Environment {
    public static func current() -> [String: String] {
        var result: [String: String] = [:]
        var pointer = environ
        // Split by bytes (strchr): a Character search over each entry cost more than the rest of
        // `rcagent get` together.
        while let entry = pointer.pointee {
            if let equals = strchr(entry, 0x3D) {
                let name = UnsafeRawBufferPointer(start: entry, count: equals - entry)
                result[String(decoding: name, as: UTF8.self)] = String(cString: equals + 1)
            }
            pointer += 1
        }
        return result
    }

    /// Only the variables `names`: for a program that reads a known few (the CLI), without building
    /// a dictionary of the whole environment at every start.
    public static func current(_ names: [String]) -> [String: String] {
        var result: [String: String] = [:]
        for name in names {
            if let value = getenv(name) { result[name] = String(cString: value) }
        }
        return result
    }
}
