import RCCore

/// One line of a response's header block as libcurl hands it over, read by its bytes only.
///
/// The line is the server's: comparing it as a `String` (`==`, `hasPrefix`, `firstIndex(of:)`,
/// trimming by `Character`) normalizes it, and a run of combining marks (one grapheme however long,
/// up to libcurl's 100 KB a header) costs time in the square of its length: 64 KB of marks cost
/// 0.6 s per comparison, several per line and per header looked up. Here every step is a pass over
/// the bytes, and a field whose name is not an HTTP token (RFC 9110) is dropped, so the names kept
/// are ASCII and every later comparison of them is one too.
enum HeaderLine: Equatable {
    /// The blank line that ends a response's headers.
    case end
    /// A status line (`HTTP/...`): a new response starts (a redirect, a 100 Continue).
    case status
    /// A field: its name lower-cased, its value without surrounding blanks.
    case field(name: String, value: String)
    /// Not a field HTTP allows (no colon, a name that is not a token, a control byte in the value).
    case ignored

    static func parse(_ line: UnsafeBufferPointer<UInt8>) -> HeaderLine {
        if line.elementsEqual([13, 10]) || line.elementsEqual([10]) { return .end }
        if line.starts(with: "HTTP/".utf8) { return .status }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return .ignored }
        let name = String(decoding: UnsafeBufferPointer(rebasing: line[..<colon]), as: UTF8.self)
        guard HeaderField.isValidName(name) else { return .ignored }
        func isBlank(_ byte: UInt8) -> Bool { byte == 32 || byte == 9 || byte == 13 || byte == 10 }
        var start = colon + 1
        var end = line.endIndex
        while start < end, isBlank(line[start]) { start += 1 }
        while end > start, isBlank(line[end - 1]) { end -= 1 }
        let value = String(decoding: UnsafeBufferPointer(rebasing: line[start..<end]), as: UTF8.self)
        guard HeaderField.isValidValue(value) else { return .ignored }
        return .field(name: name.lowercased(), value: value)
    }
}
