import RCCore
import RCSystem

#if canImport(Glibc)
    import Glibc
#endif

/// The public keys a device trusts (`TrustedKeys=`): a PEM file (one or more `PUBLIC KEY` blocks) or a
/// directory of `*.pem` and `*.pub` files, read at start and at every reload. A file or directory
/// another user can write is refused: whoever can add a key can sign the fleet's config.
public struct TrustedKeys: Sendable {
    /// Most keys trusted at once: each signature may be tried against each of them.
    public static let maximumKeys = 32
    /// Largest key file read.
    public static let maximumFileSize = 64 << 10

    /// Distinct keys (by their bytes), in the order read.
    public let keys: [Ed25519PublicKey]
    /// Where they came from, for status and errors.
    public let path: String

    public init(keys: [Ed25519PublicKey], path: String) {
        var seen: Set<[UInt8]> = []
        self.keys = keys.filter { seen.insert($0.raw).inserted }
        self.path = path
    }

    /// Reads the keys at `path` (a file or a directory).
    public static func load(_ path: String) throws(SigningError) -> TrustedKeys {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw SigningError(.key, "\(path): \(String(cString: strerror(errno)))")
        }
        var keys: [Ed25519PublicKey] = []
        if info.st_mode & S_IFMT == S_IFDIR {
            if let writers = FileWriters.others(info) {
                throw SigningError(.key, "\(path): the directory can be written by \(writers); refused")
            }
            for name in try pemFiles(in: path) { keys += try Self.keys(in: path + "/" + name) }
        } else {
            keys = try Self.keys(in: path)
        }
        let trusted = TrustedKeys(keys: keys, path: path)
        guard !trusted.keys.isEmpty else { throw SigningError(.key, "\(path): no Ed25519 public key in it") }
        guard trusted.keys.count <= maximumKeys else {
            throw SigningError(.key, "\(path): \(trusted.keys.count) keys; at most \(maximumKeys) are trusted")
        }
        return trusted
    }

    /// The keys of one file: opened once, its owner and mode checked on that descriptor, read from it.
    private static func read(_ path: String) throws(SigningError) -> [UInt8] {
        let opened: FileDescriptor?
        do { opened = try FileBytes.openRegularFile(path, flags: O_RDONLY) } catch {
            throw SigningError(.key, error.description)
        }
        guard let descriptor = opened else { throw SigningError(.key, "\(path): no such file") }
        var info = stat()
        guard fstat(descriptor.rawValue, &info) == 0 else {
            throw SigningError(.key, "\(path): \(String(cString: strerror(errno)))")
        }
        if let writers = FileWriters.others(info) {
            throw SigningError(.key, "\(path): the key file can be written by \(writers); refused")
        }
        guard Int(info.st_size) <= maximumFileSize else {
            throw SigningError(.key, "\(path): larger than \(maximumFileSize) bytes, no key file")
        }
        var bytes = [UInt8](repeating: 0, count: maximumFileSize + 1)
        var count = 0
        while count < bytes.count {
            let n = bytes.withUnsafeMutableBytes { buffer in
                Posix.retrying { Glibc.read(descriptor.rawValue, buffer.baseAddress! + count, buffer.count - count) }
            }
            if n < 0 { throw SigningError(.key, "\(path): \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            count += n
        }
        guard count <= maximumFileSize else {
            throw SigningError(.key, "\(path): larger than \(maximumFileSize) bytes, no key file")
        }
        return Array(bytes[..<count])
    }

    /// The keys of one file's PEM blocks.
    private static func keys(in path: String) throws(SigningError) -> [Ed25519PublicKey] {
        let bytes = try read(path)
        let blocks = Ed25519PublicKey.pemBlocks(bytes)
        guard !blocks.isEmpty else { throw SigningError(.key, "\(path): no \"BEGIN PUBLIC KEY\" block") }
        var keys: [Ed25519PublicKey] = []
        for block in blocks { keys.append(try Ed25519PublicKey(pem: block.block, name: "\(path):\(block.line)")) }
        return keys
    }

    /// The `*.pem` and `*.pub` files of a directory, sorted; hidden names (editors' temporary files)
    /// are skipped.
    private static func pemFiles(in directory: String) throws(SigningError) -> [String] {
        guard let handle = opendir(directory) else {
            throw SigningError(.key, "\(directory): \(String(cString: strerror(errno)))")
        }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard !name.hasPrefix("."), name.hasSuffix(".pem") || name.hasSuffix(".pub") else { continue }
            names.append(name)
            guard names.count <= maximumKeys * 4 else {
                throw SigningError(.key, "\(directory): more than \(maximumKeys * 4) key files")
            }
        }
        return names.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// Identifies the key set (for the sources' ETag context: another set re-reads the document).
    public var tag: String { FNV1a.tag(keys.map(\.keyID).joined(separator: ",").utf8) }
}
