import RCCore
import RCSystem

/// Addresses from the config file: http(s) URLs (`URL=`, `Endpoint=`) and MQTT brokers (`MQTT=`);
/// and the kernel's rtnetlink messages that tell the daemon the network may be up.
enum AddressTargets {
    static let all = [addresses, netlink]

    static let netlink = FuzzTarget(
        "netlink", checkNetlink,
        """
        rtnetlink message batches: a batch that says the network may be up says so whatever follows it, and \
        a batch without a link, address or route message never does
        """)

    private static func checkNetlink(_ check: Checker, _ bytes: [UInt8]) throws(PropertyViolation) -> FuzzOutcome {
        let up = NetlinkEvents.networkMayBeUp(bytes)
        if up {
            try check.require(
                NetlinkEvents.networkMayBeUp(bytes + [0xFF, 0, 0, 0, 20, 0]), "trailing bytes changed the verdict")
        }
        let types = Set(stride(from: 4, to: bytes.count - 1, by: 4).map { bytes[$0] })
        try check.require(!up || !types.isDisjoint(with: [16, 20, 24]), "up without a link, address or route message")
        return up ? .accepted : .rejected
    }

    static let addresses = FuzzTarget(
        "addresses", checkAddresses,
        """
        URL and MQTT broker text: an http(s) origin is a prefix with a non-empty host and replaces another \
        URL's origin cleanly; a broker address has a non-empty host and a port in 1...65535
        """)

    private static func checkAddresses(_ check: Checker, _ bytes: [UInt8]) throws(PropertyViolation) -> FuzzOutcome {
        let value = text(bytes)
        var accepted = false
        if let origin = URLText.origin(of: value) {
            accepted = true
            let scheme = origin.hasPrefix("https://") ? "https://" : "http://"
            let host = origin.dropFirst(scheme.count)
            try check.require(value.hasPrefix(origin), "origin \(origin) is not a prefix of \(value)")
            try check.require(
                origin.hasPrefix("http://") || origin.hasPrefix("https://"), "origin \(origin) has another scheme")
            try check.require(
                !host.isEmpty && !host.utf8.contains { "/?#".utf8.contains($0) }, "origin \(origin) has host \(host)")
            try check.require(URLText.replacingOrigin(of: value, with: value) == value, "replacing with itself")
            let replaced = URLText.replacingOrigin(of: "http://origin.test:8080/v1/path?q=1", with: value)
            try check.require(replaced == origin + "/v1/path?q=1", "endpoint \(value) gives \(replaced)")
            // Where redirect headers may go: the origin alone decides.
            let comparable = URLText.comparableOrigin(of: value)
            try check.require(comparable != nil, "no comparable origin for \(value)")
            try check.require(
                URLText.comparableOrigin(of: origin + "/elsewhere?x") == comparable,
                "comparable origin of \(value) depends on more than its origin")
        } else {
            try check.require(URLText.comparableOrigin(of: value) == nil, "comparable origin without an origin")
        }
        if let broker = MQTTAddress.parse(value) {
            accepted = true
            try check.require(
                broker.tls == value.hasPrefix("mqtts://"), "tls \(broker.tls) for \(value.debugDescription)")
            try check.require(
                !broker.host.isEmpty && !broker.host.utf8.contains(UInt8(ascii: "/")),
                "broker host \(broker.host.debugDescription)")
            try check.require((1...65535).contains(broker.port), "broker port \(broker.port)")
        }
        return accepted ? .accepted : .rejected
    }
}
