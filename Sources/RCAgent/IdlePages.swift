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
    /// in one tight loop, so the code that chooses them (the maps parser, pagemap) does not map its
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
    ///
    /// From `/proc/self/maps`, not `smaps`: smaps walks every page of every mapping to count it,
    /// which made the release cost 5–7 ms of CPU, and the release needs none of its counts (pagemap
    /// says which pages are the process's own).
    static func releasable() -> [(start: UInt, length: Int)] {
        guard let maps = try? FileBytes.read("/proc/self/maps"), let pagemap = MappedPages.Pagemap() else { return [] }
        return releasable(maps: maps, pagemap: pagemap)
    }

    /// ``releasable()`` for the mappings `maps` lists (the text of `/proc/self/maps`), their pages
    /// looked up in `pagemap`. A line that does not read as a mapping is skipped.
    static func releasable(maps: [UInt8], pagemap: borrowing MappedPages.Pagemap) -> [(start: UInt, length: Int)] {
        let executable = executablePath.map { Array($0.utf8) }
        var ranges: [(start: UInt, length: Int)] = []
        var lineStart = 0
        while lineStart < maps.count {
            let lineEnd = maps[lineStart...].firstIndex(of: UInt8(ascii: "\n")) ?? maps.count
            defer { lineStart = lineEnd + 1 }
            guard let mapping = Mapping(maps[lineStart..<lineEnd]) else { continue }
            if mapping.writable {
                // (The executable's mappings are private: a shared writable one is never a candidate.)
                // Only the executable's never-written sections, and only their unwritten pages.
                guard let executable, mapping.path.elementsEqual(executable), let data = MappedPages.readOnlyData
                else { continue }
                let page = UInt64(MappedPages.pageSize)
                let low = max(data.lowerBound, mapping.offset)
                let high = min(data.upperBound, mapping.offset + UInt64(mapping.end - mapping.start))
                let first = (low + page - 1) / page * page
                let last = high / page * page
                guard first < last else { continue }
                let start = mapping.start + UInt(first - mapping.offset)
                ranges += pagemap.unwrittenRuns(start, start + UInt(last - first))
                continue
            }
            // Page by page, never a mapping whole: a read-only mapping can still hold a page copied
            // on write (relocated data), or one swapped out since; dropping it would read the file's
            // bytes again in its place (a crash at the next call through a relocated pointer).
            ranges += pagemap.unwrittenRuns(mapping.start, mapping.end)
        }
        return ranges
    }

    /// One line of `/proc/self/maps` naming a file: "start-end perms offset device inode path",
    /// the numbers in hexadecimal but the inode.
    struct Mapping {
        let start: UInt
        let end: UInt
        let offset: UInt64
        let writable: Bool
        let path: ArraySlice<UInt8>

        /// `nil` for a line that is not that shape, or whose path is not absolute (anonymous
        /// memory, `[heap]`, `[stack]`, `[vdso]`).
        init?(_ line: ArraySlice<UInt8>) {
            var at = line.startIndex
            /// The next field, up to `separator` (consumed), or `nil` at the end of the line.
            func field(until separator: UInt8) -> ArraySlice<UInt8>? {
                guard let end = line[at...].firstIndex(of: separator) else { return nil }
                defer { at = end + 1 }
                return line[at..<end]
            }
            guard let start = field(until: UInt8(ascii: "-")).flatMap({ Self.hex($0, as: UInt.self) }),
                let end = field(until: UInt8(ascii: " ")).flatMap({ Self.hex($0, as: UInt.self) }),
                let permissions = field(until: UInt8(ascii: " ")), permissions.count == 4,
                let offset = field(until: UInt8(ascii: " ")).flatMap({ Self.hex($0, as: UInt64.self) }),
                field(until: UInt8(ascii: " ")) != nil, field(until: UInt8(ascii: " ")) != nil,  // device, inode
                start < end, offset <= UInt64.max - UInt64(end - start)
            else { return nil }
            let path = line[at...].drop { $0 == UInt8(ascii: " ") }
            guard path.first == UInt8(ascii: "/") else { return nil }
            self.start = start
            self.end = end
            self.offset = offset
            self.writable = permissions[permissions.startIndex + 1] == UInt8(ascii: "w")
            self.path = path
        }

        /// A hexadecimal number with no more digits than `Number` holds, else `nil`.
        private static func hex<Number: FixedWidthInteger & UnsignedInteger>(
            _ digits: ArraySlice<UInt8>, as: Number.Type
        ) -> Number? {
            guard !digits.isEmpty, digits.count <= Number.bitWidth / 4 else { return nil }
            var value: Number = 0
            for digit in digits {
                guard let nibble = digit.hexDigitValue else { return nil }
                value = value << 4 | Number(nibble)
            }
            return value
        }
    }

    /// The executable's path as `/proc/self/maps` shows it.
    static let executablePath: String? = {
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX))
        let count = buffer.withUnsafeMutableBufferPointer {
            $0.withMemoryRebound(to: CChar.self) { readlink("/proc/self/exe", $0.baseAddress!, $0.count) }
        }
        return count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : nil
    }()
}
