import Glibc
import RCCore

/// Where `rcadmin fleet exporter --listen` binds: a numeric IPv4 address and a port
/// (`127.0.0.1:9800`, `0.0.0.0:9800`) or a bracketed IPv6 one (`[::1]:9800`, `[::]:9800`). No
/// host names: what a name resolves to can change, and "localhost only" must mean exactly that.
/// Port 0 lets the kernel pick one (the exporter says which).
struct ListenAddress: Sendable, Equatable {
    enum Family: Sendable { case v4, v6 }

    let family: Family
    /// The address as given, without brackets.
    let host: String
    let port: UInt16

    /// `host:port` as an address is written in a URL: `[::1]:9800` for IPv6.
    var text: String { Self.text(host: host, port: port, family: family) }

    static func text(host: String, port: UInt16, family: Family) -> String {
        family == .v6 ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// The address in `text`, or why it is not one (a sentence for the usage error).
    static func parse(_ text: String) -> Result<ListenAddress, ListenAddressError> {
        let host: Substring
        let portText: Substring
        let family: Family
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                return .failure(ListenAddressError(text, "an IPv6 address is written [ADDRESS]:PORT"))
            }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
            family = .v6
        } else {
            guard let colon = text.lastIndex(of: ":") else {
                return .failure(ListenAddressError(text, "no :PORT"))
            }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            if host.contains(":") {
                return .failure(ListenAddressError(text, "an IPv6 address is written [ADDRESS]:PORT"))
            }
            family = .v4
        }
        guard !portText.isEmpty, portText.utf8.count <= 5, portText.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
            let port = Int(portText), port <= 65_535
        else {
            return .failure(ListenAddressError(text, "the port must be a number from 0 to 65535"))
        }
        guard Self.isNumeric(String(host), family) else {
            return .failure(
                ListenAddressError(
                    text,
                    family == .v6
                        ? "'\(TextEscaping.terminal(String(host)))' is not an IPv6 address"
                        : "'\(TextEscaping.terminal(String(host)))' is not an IPv4 address (a numeric one, such as "
                            + "127.0.0.1; no host names)"))
        }
        return .success(ListenAddress(family: family, host: String(host), port: UInt16(port)))
    }

    private static func isNumeric(_ host: String, _ family: Family) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16)
        return inet_pton(family == .v6 ? AF_INET6 : AF_INET, host, &buffer) == 1
    }
}

/// A `--listen` value that is not an address to bind: what was given and why.
struct ListenAddressError: Error, Sendable, CustomStringConvertible {
    let given: String
    let reason: String

    init(_ given: String, _ reason: String) {
        self.given = given
        self.reason = reason
    }

    var description: String {
        "--listen must be ADDRESS:PORT (127.0.0.1:9800, [::1]:9800), got '\(TextEscaping.terminal(given))': \(reason)"
    }
}
