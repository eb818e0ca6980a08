import CLazyLibraries
import Foundation
import TestSupport
import Testing

/// The libraries CLazyLibraries loads alone before libcurl and libmosquitto (shorter symbol searches
/// at load) are their own dependencies on this system: a Debian update that drops one would
/// otherwise make every daemon load a library it does not need.
@Suite struct LazyLibraryOrderTests {
    /// Each library with one of its functions, by which its file is found among this process's mappings.
    @Test(arguments: [(RC_LAZY_CURL, "curl_version"), (RC_LAZY_MOSQUITTO, "mosquitto_lib_version")])
    func theLibrariesLoadedFirstAreTheLibrarysOwnDependencies(_ library: rc_lazy_library, function: String) throws {
        let first = Self.loadedFirst(library)
        #expect(!first.isEmpty)
        #expect(rc_lazy_require(library) == nil)
        let soname = String(cString: rc_lazy_soname(library))
        let path = try #require(Self.file(of: function, in: soname), "\(soname) is loaded")
        // ldd lists the whole closure the loader maps for the file: "\tlibssl.so.3 => /lib/.../libssl.so.3".
        let ldd = try runProcess("/usr/bin/ldd", [path])
        #expect(ldd.status == 0, "\(ldd.stderr)")
        let dependencies = Set(
            ldd.stdout.split(separator: "\n").compactMap { $0.split(whereSeparator: \.isWhitespace).first })
        for name in first {
            #expect(dependencies.contains(Substring(name)), "\(soname) (\(path)) does not need \(name): \(ldd.stdout)")
            let loaded = dlopen(name, RTLD_LAZY | RTLD_NOLOAD)
            #expect(loaded != nil, "\(name) was not loaded")
            if let loaded { dlclose(loaded) }
        }
    }

    private static func loadedFirst(_ library: rc_lazy_library) -> [String] {
        guard var entry = rc_lazy_loaded_first(library) else { return [] }
        var names: [String] = []
        while let name = entry.pointee {
            names.append(String(cString: name))
            entry += 1
        }
        return names
    }

    /// The file mapped where the loaded library `soname` has `function` (its real name:
    /// libmosquitto.so.1 is libmosquitto.so.2.0.11); `nil` when it is not loaded.
    private static func file(of function: String, in soname: String) -> String? {
        guard let handle = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD) else { return nil }
        defer { dlclose(handle) }
        guard let address = dlsym(handle, function).map({ UInt(bitPattern: $0) }),
            let file = FileHandle(forReadingAtPath: "/proc/self/maps"), let bytes = try? file.readToEnd()
        else { return nil }
        // "start-end perms offset device inode path", read to its end (/proc files report a size of 0).
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            let range = fields.first?.split(separator: "-").compactMap { UInt($0, radix: 16) } ?? []
            if range.count == 2, range[0] <= address, address < range[1], fields.count == 6 {
                return String(fields[5])
            }
        }
        return nil
    }
}
