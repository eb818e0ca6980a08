import Glibc

/// Writes to a file descriptor directly (stdio's globals are not concurrency-safe in Swift 6).
enum Output {
    static func out(_ text: String) { write(1, text) }
    static func err(_ text: String) { write(2, text) }

    private static func write(_ fd: Int32, _ text: String) {
        var text = text
        text.withUTF8 { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    return  // EPIPE and friends: the reader went away; nothing useful to do.
                }
                offset += n
            }
        }
    }
}
