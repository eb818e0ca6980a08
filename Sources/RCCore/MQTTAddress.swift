/// A broker address from `[Push] MQTT=` or `rcadmin notify-stale --mqtt`.
public enum MQTTAddress {
    /// `mqtt://host[:port]` (1883) or `mqtts://host[:port]` (8883); `nil` for anything else, an empty
    /// host or a port that is not a number in 1...65535 included.
    public static func parse(_ url: String) -> (tls: Bool, host: String, port: Int32)? {
        let tls = url.hasPrefix("mqtts://")
        guard tls || url.hasPrefix("mqtt://") else { return nil }
        var rest = url.dropFirst(tls ? 8 : 7)
        if let slash = rest.firstIndex(of: "/") { rest = rest[..<slash] }
        var host = rest
        var port: Int32 = tls ? 8883 : 1883
        // A port follows the last colon, unless that colon is inside an IPv6 literal (`[::1]`).
        if let colon = rest.lastIndex(of: ":"), !rest[colon...].contains("]") {
            guard let number = Int32(rest[rest.index(after: colon)...]), (1...65535).contains(number) else {
                return nil
            }
            host = rest[..<colon]
            port = number
        }
        guard !host.isEmpty else { return nil }
        return (tls, String(host), port)
    }
}
