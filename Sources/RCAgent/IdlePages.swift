import CLinux
@preconcurrency import Dispatch
import Glibc
import RCCore
import RCSystem

/// Gives back the pages an idle daemon does not use (idle PSS ≤ 8 MiB). Start-up and fetch
/// rounds run code from all over a 14 MB static binary and the shared libraries, and the kernel maps
/// whole 64 KiB windows around each page they run, so about two thirds of a just-busy daemon's PSS
/// are code and read-only data that idle does not touch. This drops the daemon's mappings of file
/// pages it never wrote, in mappings it cannot write and in the executable's `.rodata`: they stay in
/// the page cache (a cgroup's memory use does not change), and the next fetch maps back the ones it
/// runs (minor faults, well under a millisecond). Pages the process wrote (relocated data, anything
/// copied on write) are never touched. BENCHMARKS.md has the measurements.
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

    /// Gives the pages back now; the bytes given back. Every range is chosen first and then dropped
    /// in one tight loop, so the code that chooses them (the smaps parser, pagemap) does not map its
    /// pages back after the release.
    @discardableResult
    static func release() -> Int {
        // The free pages inside the malloc arenas first (the heap a round grew and freed).
        _ = malloc_trim(0)
        let ranges = releasable()
        var released = 0
        for range in ranges
        where madvise(UnsafeMutableRawPointer(bitPattern: range.start), range.length, MADV_DONTNEED) == 0 {
            released += range.length
        }
        return released
    }

    /// The ranges ``release()`` drops: the pages of every file mapping the process cannot write that
    /// it never wrote (around the relocated, read-only-after-start data: 256 KiB of the binary); and
    /// the pages of the executable's `.rodata` that lie in its writable segment
    /// (``MappedPages/readOnlyData``), page by page too. A page that was written is never in a
    /// range: dropping it would lose what was written.
    static func releasable() -> [(start: UInt, length: Int)] {
        guard let smaps = try? FileBytes.read("/proc/self/smaps") else { return [] }
        return releasable(smaps: smaps)
    }

    /// ``releasable()`` for the mappings `smaps` lists (the text of `/proc/self/smaps`).
    static func releasable(smaps: [UInt8]) -> [(start: UInt, length: Int)] {
        let executable = executablePath.map { Array($0.utf8) }
        var ranges: [(start: UInt, length: Int)] = []
        var candidate: (start: UInt, end: UInt, offset: UInt64, writable: Bool, executable: Bool)?
        for line in smaps.split(separator: UInt8(ascii: "\n")) {
            guard let first = line.first else { continue }
            if first >= UInt8(ascii: "A") && first <= UInt8(ascii: "Z") {
                guard let mapping = candidate, line.starts(with: Array("Anonymous:".utf8)) else { continue }
                candidate = nil
                if mapping.writable {
                    // (The executable's mappings are private: a shared writable one is never a candidate.)
                    // Only the executable's never-written sections, and only their unwritten pages.
                    guard mapping.executable, let data = MappedPages.readOnlyData else { continue }
                    let page = UInt64(MappedPages.pageSize)
                    let low = max(data.lowerBound, mapping.offset)
                    let high = min(data.upperBound, mapping.offset + UInt64(mapping.end - mapping.start))
                    let first = (low + page - 1) / page * page
                    let last = high / page * page
                    guard first < last else { continue }
                    let start = mapping.start + UInt(first - mapping.offset)
                    ranges += MappedPages.unwrittenRuns(start, start + UInt(last - first))
                    continue
                }
                // Page by page even when "Anonymous: 0 kB": a page copied on write and swapped out
                // since counts under "Swap:", not there, and dropping the mapping whole would throw
                // it away (relocated pointers read from the file again: a crash at the next call).
                ranges += MappedPages.unwrittenRuns(mapping.start, mapping.end)
                continue
            }
            // "start-end perms offset device inode path": a file mapping.
            candidate = nil
            let fields = line.split(separator: UInt8(ascii: " "), maxSplits: 5, omittingEmptySubsequences: true)
            guard fields.count == 6, fields[1].count == 4 else { continue }
            let path = fields[5].drop(while: { $0 == UInt8(ascii: " ") })
            guard path.first == UInt8(ascii: "/") else { continue }
            let bounds = fields[0].split(separator: UInt8(ascii: "-")).compactMap {
                UInt(String(decoding: $0, as: UTF8.self), radix: 16)
            }
            guard bounds.count == 2, bounds[0] < bounds[1],
                let offset = UInt64(String(decoding: fields[2], as: UTF8.self), radix: 16)
            else { continue }
            candidate = (
                bounds[0], bounds[1], offset, fields[1][fields[1].startIndex + 1] == UInt8(ascii: "w"),
                executable.map { path.elementsEqual($0) } ?? false
            )
        }
        return ranges
    }

    /// The executable's path as `/proc/self/smaps` shows it.
    static let executablePath: String? = {
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX))
        let count = buffer.withUnsafeMutableBufferPointer {
            $0.withMemoryRebound(to: CChar.self) { readlink("/proc/self/exe", $0.baseAddress!, $0.count) }
        }
        return count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : nil
    }()
}
