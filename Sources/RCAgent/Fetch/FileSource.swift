import RCCore
import RCSystem
import RCTemplate

/// The `file` source: a JSON file in either document shape. Its ETag is a hash of the
/// bytes, so rewriting the same content is a no-change fetch, not a new activation.
public struct FileSource: ConfigSource {
    public let path: String
    private let reader: DocumentReader

    init(path: String, reader: DocumentReader) {
        self.path = path
        self.reader = reader
    }

    public var name: String { "file \(path)" }

    /// Reads the file (a regular file, at most 16 MiB, symlinks only from trusted owners) and parses it.
    /// The same bytes read with the same signals give the same ETag, so nothing is stored twice.
    public func fetch(etag: String?, trigger: FetchTrigger) async throws(SourceError) -> SourceResult {
        let bytes: [UInt8]
        do {
            guard let read = try FileBytes.read(path, limit: 16 << 20, symlinks: .trustedOwners) else {
                throw SourceError(.unavailable, "\(path): no such file")
            }
            bytes = read
        } catch let error as SystemError {
            throw SourceError(.unavailable, error.description)
        } catch let error as SourceError {
            throw error
        } catch {
            throw SourceError(.other, "\(error)")
        }
        let tag = FNV1a.tag(bytes) + ";" + reader.contextTag
        if tag == etag { return .notModified }
        do {
            return .document(try reader.read(bytes, name: path), etag: tag)
        } catch {
            throw SourceError(.badDocument, error.description)
        }
    }
}
