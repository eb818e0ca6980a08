/// `%HH` back to bytes: how tests read the percent-encoded keys hooks get.
public func percentDecoded(_ text: String) -> [UInt8] {
    var out: [UInt8] = []
    var bytes = Array(text.utf8)[...]
    while let byte = bytes.popFirst() {
        if byte == UInt8(ascii: "%"), bytes.count >= 2,
            let value = UInt8(String(decoding: bytes.prefix(2), as: UTF8.self), radix: 16)
        {
            out.append(value)
            bytes = bytes.dropFirst(2)
        } else {
            out.append(byte)
        }
    }
    return out
}
