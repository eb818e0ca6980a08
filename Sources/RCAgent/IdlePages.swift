import CLinux
@preconcurrency import Dispatch
import Glibc
import RCCore
import RCSystem

/// Gives back the pages an idle daemon does not use (idle PSS ≤ 8 MiB). Start-up and fetch
/// rounds run code from all over a 14 MB static binary and the shared libraries, and the kernel maps
/// whole 64 KiB windows around each page they run, so about two thirds of a just-busy daemon's PSS
/// are code and read-only data that idle does not touch. This drops the daemon's mappings of file
/// pages it can only read and never wrote: they stay in the page cache (a cgroup's memory use does
/// not change), and the next fetch maps back the ones it runs (minor faults, well under a
/// millisecond). Pages the process wrote (relocated data, anything copied on write) are never
/// touched. BENCHMARKS.md has the measurements.
enum IdlePages {
    /// Releases a moment from now, on a queue of its own, once the caller (the agent's loop) has
    /// gone back to waiting: whatever code runs after the release maps its pages back, so the
    /// release must be the last thing an idle daemon does, not followed by setting up the next wait
    /// (that cost 0.8 MiB of idle PSS, measured with bench/idle.py).
    /// Then once more 20 s later: the dispatch pool threads the round started retire a few seconds
    /// after it, and their exit runs code of its own (with the arena limit, idle PSS 35 s after a
    /// fetch 5.8–6.4 → 5.5 MiB with every feature loaded, `bench/idle.py --full`).
    static func releaseOnceWaiting() {
        let queue = DispatchQueue.global(qos: .utility)
        queue.asyncAfter(deadline: .now() + .milliseconds(100)) { release() }
        queue.asyncAfter(deadline: .now() + .seconds(20)) { release() }
    }

    @discardableResult
    static func release() -> Int {
        // The free pages inside the malloc arenas first (the heap a round grew and freed).
        _ = malloc_trim(0)
        guard let smaps = try? FileBytes.read("/proc/self/smaps") else { return 0 }
        var released = 0
        var candidate: (start: UInt, end: UInt)?
        for line in smaps.split(separator: UInt8(ascii: "\n")) {
            guard let first = line.first else { continue }
            if first >= UInt8(ascii: "A") && first <= UInt8(ascii: "Z") {
                // "Anonymous: 0 kB": no page of this mapping was copied on write.
                guard let range = candidate, line.starts(with: Array("Anonymous:".utf8)) else { continue }
                candidate = nil
                let kib = line.dropFirst("Anonymous:".count).filter { $0 >= 48 && $0 <= 57 }
                guard kib.elementsEqual([UInt8(ascii: "0")]) else { continue }
                if madvise(
                    UnsafeMutableRawPointer(bitPattern: range.start), Int(range.end - range.start), MADV_DONTNEED)
                    == 0
                {
                    released += Int(range.end - range.start)
                }
                continue
            }
            // "start-end perms offset device inode path": a file mapped without write permission.
            candidate = nil
            let fields = line.split(separator: UInt8(ascii: " "), maxSplits: 5, omittingEmptySubsequences: true)
            guard fields.count == 6, fields[1].count == 4, fields[1][fields[1].startIndex + 1] == UInt8(ascii: "-"),
                fields[5].first(where: { $0 != UInt8(ascii: " ") }) == UInt8(ascii: "/")
            else { continue }
            let bounds = fields[0].split(separator: UInt8(ascii: "-")).compactMap {
                UInt(String(decoding: $0, as: UTF8.self), radix: 16)
            }
            if bounds.count == 2, bounds[0] < bounds[1] { candidate = (bounds[0], bounds[1]) }
        }
        return released
    }
}
