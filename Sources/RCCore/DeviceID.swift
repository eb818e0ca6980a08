/// Device ids are shaped like Firebase installation ids (FIDs): 17 random bytes whose first four
/// bits are 0111, base64url-encoded and cut to 22 characters, so they always match `^[cdef][\w-]{21}$`.
public enum DeviceID {
    public static func generate() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes = (0..<17).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes[0] = 0b0111_0000 | (bytes[0] & 0b0000_1111)
        return String(Base64URL.encode(bytes).prefix(22))
    }

    public static func isValid(_ id: String) -> Bool {
        let bytes = Array(id.utf8)
        guard bytes.count == 22, "cdef".utf8.contains(bytes[0]) else { return false }
        return bytes.dropFirst().allSatisfy {
            ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) || $0 == 45 || $0 == 95
        }
    }
}
