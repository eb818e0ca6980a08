import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#endif

/// systemd's own `EnvironmentFile=` reader, `load_env_file()` in libsystemd-shared (systemd is not
/// PID 1 in the test container, so `systemd-run` cannot be used; the library is the same code).
public enum SystemdEnvironmentFile {
    typealias LoadEnvFile =
        @convention(c) (
            UnsafeMutableRawPointer?, UnsafePointer<CChar>?,
            UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?
        ) -> Int32

    /// The assignments systemd reads from `path`, or nil when libsystemd-shared is not installed.
    public static func load(_ path: String) throws -> [String: [UInt8]]? {
        let candidates = ["/usr/lib/x86_64-linux-gnu/systemd", "/usr/lib/aarch64-linux-gnu/systemd", "/lib/systemd"]
            .flatMap { dir in
                ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [])
                    .filter { $0.hasPrefix("libsystemd-shared-") && $0.hasSuffix(".so") }.map { dir + "/" + $0 }
            }
        guard let library = candidates.first, let handle = dlopen(library, RTLD_NOW | RTLD_LOCAL),
            let symbol = dlsym(handle, "load_env_file")
        else { return nil }
        let loadEnvFile = unsafeBitCast(symbol, to: LoadEnvFile.self)
        var list: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        let rc = loadEnvFile(nil, path, &list)
        guard rc >= 0, let list else { throw TestFailure("load_env_file failed: \(String(cString: strerror(-rc)))") }
        var result: [String: [UInt8]] = [:]
        var index = 0
        while let entry = list[index] {
            let bytes = Array(UnsafeBufferPointer(start: entry, count: strlen(entry))).map { UInt8(bitPattern: $0) }
            let equals = bytes.firstIndex(of: UInt8(ascii: "="))!
            result[String(decoding: bytes[..<equals], as: UTF8.self)] = Array(bytes[(equals + 1)...])
            free(entry)
            index += 1
        }
        free(list)
        return result
    }
}
