import Glibc
import RCSystem

/// What ``IdlePages`` needs to know about the process's pages below the level of a mapping: which
/// pages of a range were never written (`/proc/self/pagemap`), and where in the executable's file
/// the data that is never written lies although the linker put it in a writable segment.
enum MappedPages {
    static let pageSize = UInt(sysconf(Int32(_SC_PAGESIZE)))

    /// The process's `/proc/self/pagemap`, open for one release: every range of it is read through
    /// the one descriptor (opened once per range, a release of a daemon with libcurl loaded opened
    /// it 150 times).
    struct Pagemap: ~Copyable {
        private let fd: FileDescriptor

        /// `nil` when pagemap cannot be opened (then nothing is dropped). Pagemap's flags are
        /// readable by the process itself without privileges (Linux 4.2).
        init?() {
            guard let fd = FileDescriptor(returnedBy: open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)) else {
                return nil
            }
            self.fd = fd
        }

        /// The runs of pages in `start..<end` that hold no page of the process's own (none copied
        /// on write, none swapped out), as (start, length). Dropping them loses nothing: they are
        /// the file's pages, or not mapped at all. Empty when pagemap cannot be read.
        func unwrittenRuns(_ start: UInt, _ end: UInt) -> [(start: UInt, length: Int)] {
            let pages = Int((end - start) / pageSize)
            guard pages > 0 else { return [] }
            var entries = [UInt64](repeating: 0, count: pages)
            let want = pages * 8
            let got = entries.withUnsafeMutableBytes { buffer in
                Posix.retrying { pread(fd.rawValue, buffer.baseAddress, want, off_t(start / pageSize * 8)) }
            }
            guard got == want else { return [] }
            var runs: [(start: UInt, length: Int)] = []
            var runStart: Int?
            for index in 0...pages {
                // Bit 63: present; 62: swapped; 61: a file page (or shared). A present page that is
                // not the file's was copied on write; a swapped one too.
                let own =
                    index < pages
                    && (entries[index] & (1 << 62) != 0 || entries[index] & (1 << 63 | 1 << 61) == 1 << 63)
                if index < pages && !own {
                    if runStart == nil { runStart = index }
                } else if let first = runStart {
                    runs.append((start + UInt(first) * pageSize, (index - first) * Int(pageSize)))
                    runStart = nil
                }
            }
            return runs
        }
    }

    /// The file offsets of the executable's `.rodata` (`nil` when it cannot be read or has none).
    /// Gold puts `.rodata` in the writable data segment when an object marks its `.rodata`
    /// writable (the static Swift runtime's do), so its mapping is writable although nothing writes
    /// to it: up to 1 MiB of the daemon's idle PSS. Read once, at the first release.
    static let readOnlyData: Range<UInt64>? = sectionOffsets(".rodata", in: "/proc/self/exe")

    /// The file offsets `[sh_offset, sh_offset + sh_size)` of the ELF64 section `name` in `path`.
    static func sectionOffsets(_ name: String, in path: String) -> Range<UInt64>? {
        guard let fd = FileDescriptor(returnedBy: open(path, O_RDONLY | O_CLOEXEC)) else { return nil }
        // Offsets and sizes are the file's own 64-bit numbers: one past what a file offset (`off_t`)
        // or an `Int` holds is no section of a file, not a trap.
        func bytes(at offset: UInt64, count wanted: UInt64) -> [UInt8]? {
            guard wanted > 0, wanted <= 1 << 22, offset <= UInt64(Int64.max) - wanted else { return nil }
            let count = Int(wanted)
            var buffer = [UInt8](repeating: 0, count: count)
            let got = buffer.withUnsafeMutableBytes { raw in
                Posix.retrying { pread(fd.rawValue, raw.baseAddress, count, off_t(offset)) }
            }
            return got == count ? buffer : nil
        }
        func integer(_ bytes: [UInt8], _ at: Int, _ size: Int) -> UInt64 {
            (0..<size).reduce(UInt64(0)) { $0 | UInt64(bytes[at + $1]) << (8 * UInt64($1)) }
        }
        // Elf64_Ehdr: "\x7fELF", class 2 (64-bit), data 1 (little-endian); e_shoff at 0x28,
        // e_shentsize at 0x3A, e_shnum at 0x3C, e_shstrndx at 0x3E.
        guard let header = bytes(at: 0, count: 64), header[0..<6].elementsEqual([0x7F, 0x45, 0x4C, 0x46, 2, 1])
        else { return nil }
        let tableOffset = integer(header, 0x28, 8)
        let entrySize = Int(integer(header, 0x3A, 2))
        let count = Int(integer(header, 0x3C, 2))
        let namesIndex = Int(integer(header, 0x3E, 2))
        guard entrySize >= 64, namesIndex < count,
            let table = bytes(at: tableOffset, count: UInt64(entrySize * count))
        else { return nil }
        // Elf64_Shdr: sh_name at 0, sh_offset at 0x18, sh_size at 0x20.
        let namesAt = namesIndex * entrySize
        guard
            let names = bytes(at: integer(table, namesAt + 0x18, 8), count: integer(table, namesAt + 0x20, 8))
        else { return nil }
        let wanted = Array(name.utf8) + [0]
        for index in 0..<count {
            let at = index * entrySize
            let nameStart = Int(integer(table, at, 4))
            guard nameStart + wanted.count <= names.count,
                names[nameStart..<nameStart + wanted.count].elementsEqual(wanted)
            else { continue }
            let offset = integer(table, at + 0x18, 8)
            let (end, overflow) = offset.addingReportingOverflow(integer(table, at + 0x20, 8))
            return overflow ? nil : offset..<end
        }
        return nil
    }
}
