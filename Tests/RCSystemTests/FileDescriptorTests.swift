import Glibc
import RCSystem
import Testing

/// The descriptor owner and the POSIX helpers, on real pipes and socket pairs. Whether a descriptor
/// was closed is seen from the other end (end of stream), never by probing its number, which a test
/// running in parallel may have been given again.
@Suite struct FileDescriptorTests {
    /// A pipe's two ends, or a failed test.
    func pipeEnds() throws -> (read: Int32, write: Int32) {
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        return (ends[0], ends[1])
    }

    /// Whether the write end of the pipe read through `fd` has been closed (POLLHUP, now).
    func writerClosed(_ fd: Int32) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) == 1 && entry.revents & Int16(POLLHUP) != 0
    }

    @Test func closesWhenItGoesOutOfScope() throws {
        let (reader, writer) = try pipeEnds()
        defer { close(reader) }
        do {
            let owned = FileDescriptor(writer)
            #expect(owned.rawValue == writer)
            #expect(!writerClosed(reader))
        }
        #expect(writerClosed(reader))
    }

    @Test func closesOnAThrow() throws {
        struct Failure: Error {}
        let (reader, writer) = try pipeEnds()
        defer { close(reader) }
        func openThenFail() throws {
            let owned = FileDescriptor(writer)
            if owned.rawValue >= 0 { throw Failure() }
        }
        #expect(throws: Failure.self) { try openThenFail() }
        #expect(writerClosed(reader))
    }

    @Test func closeAndReleaseSayWhatHappens() throws {
        let (reader, writer) = try pipeEnds()
        defer { close(reader) }
        let released = FileDescriptor(writer).release()
        #expect(released == writer)
        #expect(!writerClosed(reader))
        FileDescriptor(released).close()
        #expect(writerClosed(reader))
    }

    @Test func returnedByIsNilForAFailedCall() {
        if FileDescriptor(returnedBy: -1) != nil { Issue.record("-1 became a descriptor") }
        guard let fd = FileDescriptor(returnedBy: open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) else {
            Issue.record("open / failed: \(errno)")
            return
        }
        #expect(fd.rawValue >= 0)
    }

    @Test func retryingCallsAgainOnlyOnEINTR() {
        var calls = 0
        let result = Posix.retrying { () -> Int in
            calls += 1
            if calls < 3 {
                errno = EINTR
                return -1
            }
            return 5
        }
        #expect(result == 5 && calls == 3)

        calls = 0
        let failed = Posix.retrying { () -> Int32 in
            calls += 1
            errno = EBADF
            return -1
        }
        #expect(failed == -1 && errno == EBADF && calls == 1)
    }

    @Test func writeAllResumesShortAndBlockedWrites() throws {
        let (reader, writer) = try pipeEnds()
        defer {
            close(reader)
            close(writer)
        }
        // Non-blocking, with 1 MiB against a 64 KiB pipe: writes come back short, then EAGAIN, and
        // each time the reader makes room.
        _ = fcntl(writer, F_SETFL, O_NONBLOCK)
        _ = fcntl(reader, F_SETFL, O_NONBLOCK)
        let bytes = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        var received: [UInt8] = []
        var blocked = 0
        func drain() {
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while true {
                let n = chunk.withUnsafeMutableBytes { read(reader, $0.baseAddress, $0.count) }
                if n <= 0 { return }
                received += chunk[0..<n]
            }
        }
        let ok = Posix.writeAll(writer, bytes) {
            blocked += 1
            drain()
            return true
        }
        drain()
        #expect(ok)
        #expect(blocked > 0)
        #expect(received == bytes)
    }

    @Test func writeAllGivesUpWhenToldTo() throws {
        let (reader, writer) = try pipeEnds()
        defer {
            close(reader)
            close(writer)
        }
        _ = fcntl(writer, F_SETFL, O_NONBLOCK)
        let ok = Posix.writeAll(writer, [UInt8](repeating: 7, count: 1 << 20))
        #expect(!ok && errno == EAGAIN)
    }

    @Test func writeAllSendsWithTheCallersFlags() throws {
        var ends: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
        defer { close(ends[0]) }
        #expect(Posix.writeAll(ends[0], "hello\n", using: .send(flags: Int32(MSG_NOSIGNAL))))
        var line = [UInt8](repeating: 0, count: 16)
        let n = line.withUnsafeMutableBytes { recv(ends[1], $0.baseAddress, $0.count, 0) }
        #expect(Array(line[0..<max(n, 0)]) == Array("hello\n".utf8))
        // The peer gone: EPIPE, not a SIGPIPE that would end the test process (MSG_NOSIGNAL kept).
        close(ends[1])
        #expect(!Posix.writeAll(ends[0], [1, 2, 3], using: .send(flags: Int32(MSG_NOSIGNAL))))
        #expect(errno == EPIPE)
    }
}
