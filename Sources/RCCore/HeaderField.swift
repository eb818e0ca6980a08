/// HTTP header fields as RFC 9110 (section 5) allows them, checked by their bytes: a name is a
/// token, a value holds no control byte but HTAB (no CR, LF or NUL, which would end the header or
/// start another, no DEL). Every header rcagent and rcadmin send (`Header=` lines, API keys, auth
/// tokens, ETags) and every value taken from a response is checked with these.
public enum HeaderField {
    /// Whether `value` is a field-value: visible bytes, spaces and tabs (and bytes of 0x80 and
    /// above: UTF-8 passes as RFC 9110's obs-text).
    public static func isValidValue(_ value: some StringProtocol) -> Bool {
        value.utf8.allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }
    }

    /// Whether `name` is a field-name: one or more token characters.
    public static func isValidName(_ name: some StringProtocol) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy(isTokenByte)
    }

    /// Why the `Name: value` line `line` cannot be sent, or nil when it can.
    public static func problem(inLine line: String) -> String? {
        guard let colon = line.utf8.firstIndex(of: UInt8(ascii: ":")) else { return "not Name: value" }
        let name = line[..<colon]
        guard isValidName(name) else { return "the name is not an HTTP token" }
        return problem(inValue: line[line.index(after: colon)...])
    }

    /// Why `value` is not a field-value (the first control byte and where), or nil when it is one.
    public static func problem(inValue value: some StringProtocol) -> String? {
        guard let index = value.utf8.firstIndex(where: { $0 != 0x09 && ($0 < 0x20 || $0 == 0x7F) }) else { return nil }
        let byte = value.utf8[index]
        let offset = value.utf8.distance(from: value.utf8.startIndex, to: index)
        let names: [UInt8: String] = [0x00: "NUL", 0x0A: "LF", 0x0D: "CR", 0x7F: "DEL"]
        let shown = names[byte] ?? "0x" + String(byte, radix: 16, uppercase: true)
        return "it holds a control byte (\(shown) at byte \(offset)), which HTTP does not allow in a header"
    }

    /// RFC 9110 tchar: `!#$%&'*+-.^_`|~`, digits and letters.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "A")...UInt8(ascii: "Z"):
            true
        default: Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }
}
