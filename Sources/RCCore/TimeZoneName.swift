/// An IANA time zone name as `Window=` takes it (`Europe/Berlin`). Whether the system's zone database
/// has it is RCSystem's question (`TimeZoneName.exists`), asked when the config is loaded.
public enum TimeZoneName {
    /// Whether `name` is well formed: letters, digits, `/_-+`, no empty, `.` or `..` component, so
    /// it stays inside the zone database.
    public static func isWellFormed(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= 100, !name.hasPrefix("/") else { return false }
        let bytesAllowed = name.utf8.allSatisfy { byte in
            (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) || (byte >= 0x30 && byte <= 0x39)
                || byte == 0x2f || byte == 0x5f || byte == 0x2d || byte == 0x2b
        }
        return bytesAllowed
            && name.split(separator: "/", omittingEmptySubsequences: false).allSatisfy {
                !$0.isEmpty && $0 != "." && $0 != ".."
            }
    }
}
