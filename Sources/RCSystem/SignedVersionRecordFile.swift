import RCCore

/// The signed-version record on disk, beside the state database.
extension SignedVersionRecord {
    /// The record at `path`: `nil` when there is none; an error when it cannot be read or is damaged
    /// (the agent then refuses signed documents rather than forget the version it must not go below).
    public static func load(_ path: String) throws(DocumentError) -> SignedVersionRecord? {
        let bytes: [UInt8]?
        do { bytes = try FileBytes.read(path, limit: 4_096) } catch {
            throw DocumentError(document: path, reason: error.description)
        }
        guard let bytes else { return nil }
        switch parse(bytes) {
        case let .success(record): return record
        case let .failure(error): throw DocumentError(document: path, reason: error.reason)
        }
    }

    /// Replaces the record at `path` (temp file, fsync, rename: a crash leaves the old or the new one).
    public func save(_ path: String) throws(DocumentError) {
        do { try FileBytes.writeAtomically(path, Array((json.compactText + "\n").utf8), mode: 0o644) } catch {
            throw DocumentError(document: path, reason: error.description)
        }
    }
}
