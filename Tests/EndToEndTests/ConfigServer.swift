import Foundation
import Glibc
import TestSupport

/// The test config server (Tests/Fixtures/config_server.py) as a real process on loopback.
/// Tests script it by writing its mode file and read what it saw from its request log.
final class ConfigServer {
    let directory: URL
    private let server: FixtureProcess
    var port: Int { server.port }
    let scheme: String

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/config_server.py").path

    /// `networkNamespace`: serve inside that network namespace (`ip netns exec`).
    init(in sandbox: Sandbox, tls: (certificate: String, key: String)? = nil, networkNamespace: String? = nil) throws {
        directory = sandbox.root.appendingPathComponent("server-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        scheme = tls == nil ? "http" : "https"
        try "".write(to: directory.appendingPathComponent("requests.log"), atomically: true, encoding: .utf8)
        server = try FixtureProcess(
            inNetworkNamespace(
                networkNamespace,
                ["/usr/bin/python3", Self.script, directory.path]
                    + (tls.map { ["--tls", $0.certificate, $0.key] } ?? [])),
            name: "the config server")
    }

    var url: String { "\(scheme)://127.0.0.1:\(port)/config.json" }

    func setMode(_ mode: [String: Any]) throws {
        let data = try JSONSerialization.data(withJSONObject: mode)
        let temporary = directory.appendingPathComponent("mode.tmp")
        try data.write(to: temporary)
        guard rename(temporary.path, directory.appendingPathComponent("mode.json").path) == 0 else {
            throw DaemonError("rename mode file")
        }
    }

    func serve(_ document: String, etag: String? = nil) throws {
        var mode: [String: Any] = ["kind": "document", "body": document]
        if let etag { mode["etag"] = etag }
        try setMode(mode)
    }

    /// The headers (names lower-cased) of every request so far, oldest first.
    var requests: [[String: String]] {
        let text = (try? String(contentsOf: directory.appendingPathComponent("requests.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["headers"]
                as? [String: String]
        }
    }
}

/// A throwaway certificate authority and certificates for TLS tests (openssl CLI).
struct TestPKI {
    let directory: URL
    let caCertificate: String
    let serverCertificate: String
    let serverKey: String
    let rogueCertificate: String
    let rogueKey: String

    init(in directory: URL) throws {
        self.directory = directory
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        let openssl = Self.openssl
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        caCertificate = path("ca.pem")
        try openssl(
            ["req", "-x509"] + ec + [
                "-keyout", path("ca.key"), "-out", caCertificate, "-days", "2", "-subj", "/CN=rcagent test CA",
            ])
        serverKey = path("server.key")
        serverCertificate = path("server.pem")
        try openssl(["req"] + ec + ["-keyout", serverKey, "-out", path("server.csr"), "-subj", "/CN=127.0.0.1"])
        try "subjectAltName=IP:127.0.0.1,DNS:localhost\n".write(
            toFile: path("san.ext"), atomically: true, encoding: .utf8)
        try openssl([
            "x509", "-req", "-in", path("server.csr"), "-CA", caCertificate, "-CAkey", path("ca.key"),
            "-CAcreateserial", "-out", serverCertificate, "-days", "2", "-extfile", path("san.ext"),
        ])
        rogueKey = path("rogue.key")
        rogueCertificate = path("rogue.pem")
        try openssl(
            ["req", "-x509"] + ec + [
                "-keyout", rogueKey, "-out", rogueCertificate, "-days", "2",
                "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
            ])
    }

    /// A client certificate with `commonName`, signed by the test CA (an MQTT broker that takes the
    /// certificate's name as the user name then applies that user's ACL): certificate and key paths.
    func clientCertificate(commonName: String) throws -> (certificate: String, key: String) {
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        let name = "client-" + commonName.filter { $0.isLetter || $0.isNumber }
        let (certificate, key) = (path(name + ".pem"), path(name + ".key"))
        try Self.openssl([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out",
            path(name + ".csr"), "-subj", "/CN=\(commonName)",
        ])
        try Self.openssl([
            "x509", "-req", "-in", path(name + ".csr"), "-CA", caCertificate, "-CAkey", path("ca.key"),
            "-CAcreateserial", "-out", certificate, "-days", "2",
        ])
        return (certificate, key)
    }

    private static func openssl(_ args: [String]) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        p.arguments = args
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw DaemonError("openssl \(args.first ?? "") failed") }
    }
}

/// `command` run inside a network namespace (`ip netns exec`), or as it is without one.
func inNetworkNamespace(_ namespace: String?, _ command: [String]) -> [String] {
    namespace.map { ["/usr/sbin/ip", "netns", "exec", $0] + command } ?? command
}
