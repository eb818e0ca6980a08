/// A broker address from `[Push] MQTT=` or `rcadmin notify-stale --mqtt`.
public enum MQTTAddress {
    /// `mqtt://host[:port]` (1883) or `mqtts://host[:port]` (8883); `nil` for anything else.
    public static func parse(_ url: String) -> (tls: Bool, host: String, port: Int32)? {
        let tls = url.hasPrefix("mqtts://")
        guard tls || url.hasPrefix("mqtt://") else { return nil }
        var rest = url.dropFirst(tls ? 8 : 7)
        if let slash = rest.firstIndex(of: "/") { rest = rest[..<slash] }
        guard !rest.isEmpty else { return nil }
        if let colon = rest.lastIndex(of: ":"), let port = Int32(rest[rest.index(after: colon)...]) {
            return (tls, String(rest[..<colon]), port)
        }
        return (tls, String(rest), tls ? 8883 : 1883)
    }
}
