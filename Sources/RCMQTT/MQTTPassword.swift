import RCCore
import RCSystem

/// The password of an MQTT login, read from a file (`MQTTPasswordFile=`, `[Report]
/// MQTTPasswordFile=`, rcadmin's `--password-file`): one reading for the daemon and rcadmin. The
/// file's text with white space at both ends trimmed; a regular file of at most ``limit`` bytes,
/// reached only through links of trusted owners (root or this user: a link another user planted
/// must not hand a file only this process may read to a broker). Read at each connection's setup,
/// so a rotated password is used without a restart.
public enum MQTTPassword {
    /// 64 KiB: far past any password, small enough that a wrong path costs nothing.
    public static let limit = 64 << 10

    /// The password in `path`; an error naming the file and why it cannot be read (missing, not a
    /// regular file, too large, a link of another user).
    public static func read(fromFile path: String) throws(MQTTError) -> String {
        let bytes: [UInt8]?
        do { bytes = try FileBytes.read(path, limit: limit, symlinks: .trustedOwners) } catch {
            throw MQTTError(.setup, "cannot read the password file: \(error)", reason: error.description)
        }
        guard let bytes else {
            throw MQTTError(.setup, "cannot read the password file \(path): no such file", reason: "no such file")
        }
        return String(String(decoding: bytes, as: UTF8.self).trimmingSpaces())
    }
}
