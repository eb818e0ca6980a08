import Glibc
import RCSystem
import TestSupport
import Testing

@testable import RCAgent

/// `IdlePages.release()` on real mappings of this test process: a read-only file mapping with one
/// page written before it was made read-only (the shape of relocated data) gives back its other
/// pages and keeps the written one, and what was written is still there. And the ELF section
/// lookup the release uses for the executable's `.rodata` on hostile files.
@Suite struct IdlePagesTests {
    private static let page = Int(sysconf(Int32(_SC_PAGESIZE)))

    /// The resident KiB of the mapping that starts at `address`, from `/proc/self/smaps`.
    private func residentKiB(_ address: UnsafeMutableRawPointer) throws -> Int? {
        let text = String(decoding: try #require(try FileBytes.read("/proc/self/smaps")), as: UTF8.self)
        let start = String(UInt(bitPattern: address), radix: 16)
        var inMapping = false
        for line in text.split(separator: "\n") {
            if let dash = line.firstIndex(of: "-"), line[..<dash].allSatisfy(\.isHexDigit) {
                inMapping = line[..<dash].drop(while: { $0 == "0" }) == start
            } else if inMapping, line.hasPrefix("Rss:") {
                return Int(line.dropFirst(4).filter(\.isNumber))
            }
        }
        return nil
    }

    /// `content` (whole pages) mapped from a file, private, with page 3 written (copied on write: the
    /// process's own page now) and the mapping then made read-only, as a relocated library's data is.
    private func withPrivateMapping(
        of content: [UInt8], _ body: (UnsafeMutableRawPointer, Int, UnsafeMutablePointer<UInt8>) throws -> Void
    ) throws {
        try TemporaryDirectory.with { directory in
            let fd = open(try directory.write("pages", bytes: content), O_RDONLY | O_CLOEXEC)
            try #require(fd >= 0)
            defer { close(fd) }
            let length = content.count
            let mapped = try #require(mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0))
            try #require(mapped != MAP_FAILED)
            defer { munmap(mapped, length) }
            let bytes = mapped.assumingMemoryBound(to: UInt8.self)
            bytes[3 * Self.page] = 0xEE
            try #require(mprotect(mapped, length, PROT_READ) == 0)
            try body(mapped, length, bytes)
        }
    }

    @Test func aWrittenPageIsKeptAndTheOthersGivenBack() throws {
        let pages = 8
        // Page i of the file holds the byte i + 1 throughout.
        let content = (0..<pages).flatMap { [UInt8](repeating: UInt8($0 + 1), count: Self.page) }
        try withPrivateMapping(of: content) { (mapped, length, bytes) throws in
            var sum = 0
            for index in 0..<pages { sum += Int(bytes[index * Self.page]) }  // every page resident
            #expect(sum == 1 + 2 + 3 + 0xEE + 5 + 6 + 7 + 8)
            #expect(try residentKiB(mapped) == length / 1024)

            IdlePages.release()

            #expect(try residentKiB(mapped) == Self.page / 1024, "only the written page stays mapped")
            #expect(bytes[3 * Self.page] == 0xEE, "what was written is still there")
            for index in 0..<pages where index != 3 {
                #expect(bytes[index * Self.page + 7] == UInt8(index + 1), "page \(index) reads the file again")
            }
        }
    }

    /// A read-only mapping can still hold a page of the process's own: a page copied on write (and
    /// perhaps swapped out since). The release goes page by page (pagemap says which are the
    /// process's own, swapped ones included) rather than drop a read-only mapping whole: before,
    /// one that smaps said held no anonymous page was dropped whole, and a swapped page of its
    /// relocated data read the file again. The mapping's `/proc/self/maps` line is written out for
    /// a real mapping whose page 3 was written.
    @Test func aReadOnlyMappingIsReleasedPageByPage() throws {
        let pages = 8
        let content = [UInt8](repeating: 0x11, count: pages * Self.page)
        try withPrivateMapping(of: content) { (mapped, length, bytes) throws in
            let start = UInt(bitPattern: mapped)
            let end = start + UInt(length)
            let maps =
                "\(String(start, radix: 16))-\(String(end, radix: 16)) r--p 00000000 fd:01 4242   /synthetic/relocated.so\n"
            guard let pagemap = MappedPages.Pagemap() else {
                Issue.record("/proc/self/pagemap cannot be opened")
                return
            }
            let ranges = IdlePages.releasable(maps: Array(maps.utf8), pagemap: pagemap)
            let written = start + 3 * UInt(Self.page)
            #expect(!ranges.contains { $0.start <= written && written < $0.start + UInt($0.length) })
            #expect(ranges.reduce(0) { $0 + $1.length } == length - Self.page, "every other page is released")
            #expect(bytes[3 * Self.page] == 0xEE)
        }
    }

    /// The lines of `/proc/self/maps` the release reads: a file mapping's fields, and every other
    /// shape (anonymous memory, the kernel's named areas, a cut or garbled line, numbers too long
    /// for 64 bits) read as no mapping rather than a wrong one.
    @Test func mapsLinesAreReadFieldByField() throws {
        func mapping(_ line: String) -> IdlePages.Mapping? { IdlePages.Mapping(ArraySlice(line.utf8)) }
        let file = try #require(
            mapping("7f12a000-7f12c000 r-xp 0001f000 fd:01 1835   /usr/lib/x86_64-linux-gnu/libc.so.6 (deleted)"))
        #expect(file.start == 0x7f12_a000 && file.end == 0x7f12_c000 && file.offset == 0x1_f000 && !file.writable)
        #expect(String(decoding: file.path, as: UTF8.self) == "/usr/lib/x86_64-linux-gnu/libc.so.6 (deleted)")
        #expect(try #require(mapping("00400000-00401000 rw-p 00000000 fd:01 7 /a b")).writable)
        let refused = [
            "55779b71a000-55779b73b000 rw-p 00000000 00:00 0                          [heap]",
            "7fd786dcb000-7fd786e8f000 rw-p 00000000 00:00 0 ", "", "-", "7f12a000-7f12c000",
            "7f12a000-7f12c000 r-xp 0001f000 fd:01", "7f12c000-7f12a000 r--p 00000000 fd:01 1 /reversed",
            "7f12a000-7f12a000 r--p 00000000 fd:01 1 /empty", "7g12a000-7f12c000 r--p 00000000 fd:01 1 /not-hex",
            "7f12a000-7f12c000 r--pp 00000000 fd:01 1 /perms", "1-2 r--p 00000000000000000 fd:01 1 /17-digit-offset",
            "00000000000000001-2 r--p 0 fd:01 1 /17-digit-start",
            "1000-2000 r--p ffffffffffffffff fd:01 1 /offset-wraps",
        ]
        for line in refused { #expect(mapping(line) == nil, "\(line)") }
    }

    @Test func theSectionLookupFindsTheExecutablesReadOnlyData() throws {
        let offsets = try #require(MappedPages.sectionOffsets(".rodata", in: "/proc/self/exe"))
        var status = stat()
        try #require(stat("/proc/self/exe", &status) == 0)
        #expect(!offsets.isEmpty && offsets.upperBound <= UInt64(status.st_size))
        #expect(MappedPages.sectionOffsets(".no-such-section", in: "/proc/self/exe") == nil)
    }

    @Test func hostileFilesHaveNoSections() throws {
        var header = [UInt8](repeating: 0, count: 64)
        header.replaceSubrange(0..<6, with: [0x7F, 0x45, 0x4C, 0x46, 2, 1])
        var huge = header  // a section table far past the end of the file
        huge.replaceSubrange(0x28..<0x30, with: [0, 0, 0, 0, 0, 0, 0, 0x7F])
        huge.replaceSubrange(0x3A..<0x40, with: [64, 0, 0xFF, 0xFF, 1, 0])
        var badIndex = header  // the names' section past the table
        badIndex.replaceSubrange(0x28..<0x30, with: [64, 0, 0, 0, 0, 0, 0, 0])
        badIndex.replaceSubrange(0x3A..<0x40, with: [64, 0, 1, 0, 5, 0])
        let files: [(String, [UInt8])] = [
            ("empty", []), ("text", Array("not an executable\n".utf8)), ("truncated", Array(header[0..<20])),
            ("huge", huge), ("badIndex", badIndex + [UInt8](repeating: 0, count: 64)),
        ]
        try TemporaryDirectory.with { directory in
            for (name, bytes) in files {
                let path = try directory.write(name, bytes: bytes)
                #expect(MappedPages.sectionOffsets(".rodata", in: path) == nil, "\(name)")
            }
            #expect(MappedPages.sectionOffsets(".rodata", in: directory.file("missing")) == nil)
        }
    }

    /// Offsets and sizes past what a file offset holds (2^63 and up) are no sections either: before,
    /// converting them to `off_t` or `Int` trapped, and the daemon would die at its first release.
    @Test func offsetsPastWhatAFileOffsetHoldsAreNoSections() throws {
        func little(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
        // One section (the names' own), its header right after the file header.
        func elf(tableAt table: UInt64, namesAt offset: UInt64, namesSize size: UInt64) -> [UInt8] {
            var header = [UInt8](repeating: 0, count: 64)
            header.replaceSubrange(0..<6, with: [0x7F, 0x45, 0x4C, 0x46, 2, 1])
            header.replaceSubrange(0x28..<0x30, with: little(table))
            header.replaceSubrange(0x3A..<0x40, with: [64, 0, 1, 0, 0, 0])
            var section = [UInt8](repeating: 0, count: 64)
            section.replaceSubrange(0x18..<0x20, with: little(offset))
            section.replaceSubrange(0x20..<0x28, with: little(size))
            return header + section + Array(".rodata\u{0}".utf8)
        }
        let files: [(String, [UInt8])] = [
            ("tableFar", elf(tableAt: 1 << 63, namesAt: 128, namesSize: 8)),
            ("tableLast", elf(tableAt: UInt64.max - 63, namesAt: 128, namesSize: 8)),
            ("namesFar", elf(tableAt: 64, namesAt: UInt64.max - 7, namesSize: 8)),
            ("namesHuge", elf(tableAt: 64, namesAt: 128, namesSize: 1 << 63)),
            ("namesEndPastOffsets", elf(tableAt: 64, namesAt: UInt64(Int64.max) - 3, namesSize: 8)),
        ]
        try TemporaryDirectory.with { directory in
            for (name, bytes) in files {
                let path = try directory.write(name, bytes: bytes)
                #expect(MappedPages.sectionOffsets(".rodata", in: path) == nil, "\(name)")
            }
            // The same file with sane numbers does name a section: the cases above fail for their numbers.
            let sane = try directory.write("sane", bytes: elf(tableAt: 64, namesAt: 128, namesSize: 8))
            #expect(MappedPages.sectionOffsets(".rodata", in: sane) == 128..<136)
        }
    }
}
