import Foundation
import Glibc
import TestSupport
import Testing

/// What a state database holds, read with the `sqlite3` CLI (the product's reader is not used to
/// judge the product): integrity, both snapshots, the stale flag and the fetch bookkeeping.
struct StateSnapshot {
    var integrity: String
    /// Key → value of the active and the fetched snapshots.
    var active: [String: String]
    var fetched: [String: String]
    var activeVersion: String?
    var fetchedVersion: String?
    var staleSet: Bool
    var lastSuccess: Int64?

    /// Reads the database at `path`; throws when sqlite3 cannot read it at all.
    init(path: String) throws {
        func query(_ sql: String) throws -> [[String]] {
            let result = try runProcess("/usr/bin/sqlite3", ["-readonly", "-separator", "\u{1f}", path, sql])
            guard result.status == 0 else { throw DaemonError("sqlite3 \(sql): \(result.stderr)") }
            return result.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map {
                $0.split(separator: "\u{1f}", omittingEmptySubsequences: false).map(String.init)
            }
        }
        integrity = try query("PRAGMA integrity_check").map { $0.joined() }.joined(separator: "; ")
        // Each snapshot's values: its value set's record, decoded here (``StoredValueRecord``).
        func values(_ kind: String) throws -> [String: String] {
            let hex = try query(
                "SELECT hex(data) FROM value_sets WHERE id = (SELECT set_id FROM snapshots WHERE kind = '\(kind)')")
            guard let record = hex.first?.first else { return [:] }
            guard let entries = StoredValueRecord.decode(hex: record) else {
                throw DaemonError("the \(kind) snapshot's record is not well formed")
            }
            return Dictionary(entries.map { ($0.key, $0.value) }) { $1 }
        }
        active = try values("active")
        fetched = try values("fetched")
        let versions = Dictionary(
            try query("SELECT kind, coalesce(template_version, '') FROM snapshots").map { ($0[0], $0[1]) }
        ) { $1 }
        activeVersion = versions["active"].flatMap { $0.isEmpty ? nil : $0 }
        fetchedVersion = versions["fetched"].flatMap { $0.isEmpty ? nil : $0 }
        staleSet = try query("SELECT is_set FROM stale").first?.first == "1"
        lastSuccess = try query("SELECT coalesce(last_success_at, '') FROM fetch_state").first?.first.flatMap {
            Int64($0)
        }
    }

    /// Whether a snapshot is one published document, whole: every key present, every value of
    /// one version, and that version the snapshot's recorded template version (an empty snapshot,
    /// before the first fetch, is whole too).
    static func isWhole(_ values: [String: String], version: String?, keys: Int) -> Bool {
        if values.isEmpty { return version == nil }
        return values.count == keys && Set(values.values) == ["v\(version ?? "?")"]
    }
}

/// A small tmpfs mounted for one test (the state directory on a disk that can fill up or turn
/// read-only), unmounted at deinit. Needs root, as CI and the development machine have.
final class TmpfsMount {
    let path: String

    init(at path: String, kilobytes: Int) throws {
        self.path = path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let result = try runProcess("/bin/mount", ["-t", "tmpfs", "-o", "size=\(kilobytes)k,mode=0755", "tmpfs", path])
        guard result.status == 0 else { throw DaemonError("mount tmpfs on \(path): \(result.stderr)") }
    }

    func remount(readOnly: Bool) throws {
        let result = try runProcess("/bin/mount", ["-o", "remount,\(readOnly ? "ro" : "rw")", path])
        guard result.status == 0 else { throw DaemonError("remount \(path): \(result.stderr)") }
    }

    /// Fills the file system with one file until the kernel says ENOSPC; returns that file's path.
    func fill() -> String {
        let filler = path + "/filler"
        let fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let block = [UInt8](repeating: 0xAA, count: 4096)
        while block.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) > 0 {}
        close(fd)
        return filler
    }

    deinit {
        _ = try? runProcess("/bin/umount", ["-l", path])
    }
}

extension DaemonProcess {
    var pid: Int32 { process.processIdentifier }

    /// How many descriptors the daemon holds.
    var openDescriptors: Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    }

    var threadCount: Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").count) ?? -1
    }
}
