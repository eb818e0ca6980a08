/// The topic prefix of `[Report] MQTTStatusTopic=`: an agent publishes on `<prefix>/<deviceId>`,
/// a fleet view subscribes to `<prefix>/+`. So the prefix must be a plain topic name.
public enum ReportTopic {
    /// MQTT allows 65,535 bytes per topic; a prefix this long is a mistake, and the device id follows it.
    public static let maximumLength = 512

    /// Why `prefix` cannot be a report topic prefix, or `nil` when it can: no wildcards (a device
    /// publishes to it), no `$` start (the broker's own topics), no NUL, no trailing `/` (the
    /// device id's level would be empty otherwise, and `<prefix>/+` would not match).
    public static func problem(_ prefix: String) -> String? {
        if prefix.utf8.count > maximumLength { return "is longer than \(maximumLength) bytes" }
        if prefix.utf8.contains(where: { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "#") }) {
            return "must not hold the wildcards + or #"
        }
        if prefix.utf8.contains(0) { return "must not hold a NUL" }
        if prefix.hasPrefix("$") { return "must not start with $ (the broker's own topics)" }
        if prefix.hasSuffix("/") { return "must not end with /" }
        return nil
    }

    /// Where the device `deviceId` publishes its report.
    public static func topic(_ prefix: String, deviceId: String) -> String { prefix + "/" + deviceId }
}
