import Foundation
import Glibc
import TestSupport
import Testing

/// A private network namespace whose loopback starts down: the network a device boots without.
/// Created and removed with iproute2 (needs root, as CI has).
final class NetworkNamespace {
    let name = "rca-\(UUID().uuidString.prefix(8))"

    init() throws {
        try Self.ip(["netns", "add", name])
    }

    func loopback(up: Bool) throws {
        try Self.ip(["netns", "exec", name, "/usr/sbin/ip", "link", "set", "lo", up ? "up" : "down"])
    }

    static func ip(_ arguments: [String]) throws {
        let result = try runProcess("/usr/sbin/ip", arguments)
        guard result.status == 0 else { throw DaemonError("ip \(arguments.joined(separator: " ")): \(result.stderr)") }
    }

    deinit {
        try? Self.ip(["netns", "del", name])
    }
}

/// A network-online transition refetches when stale. The daemon and an HTTP config server
/// share a network namespace whose loopback is down, so the start-up fetch fails; bringing the
/// loopback up is the network coming online.
@Suite(.serialized, .enabled(if: getuid() == 0, "network namespaces need root")) struct NetworkTests {
    func setUp() throws -> (Sandbox, NetworkNamespace, ConfigServer) {
        let namespace = try NetworkNamespace()
        let sandbox = try Sandbox()
        let server = try ConfigServer(in: sandbox, networkNamespace: namespace.name)
        try server.serve(Sandbox.document(version: 1))
        try sandbox.writeConfig(extra: "Type=http\nURL=\(server.url)")
        return (sandbox, namespace, server)
    }

    @Test func theNetworkComingUpEndsTheBackoffOfAFailedFetch() throws {
        let (sandbox, namespace, server) = try setUp()
        let daemon = try DaemonProcess(sandbox, networkNamespace: namespace.name)
        try daemon.waitUntilReady()
        let failed = try sandbox.cli("fetch", "--wait")
        #expect(failed.status == 1, "no network, no fetch: \(failed.stdout)\(failed.stderr)")
        let status = try sandbox.cli("status").stdout
        #expect(status.contains("last fetch:   failure"), "\(status)")
        #expect(server.requests.isEmpty)

        // The backoff after that failure is 1-3 minutes; the network coming up ends it.
        try namespace.loopback(up: true)
        #expect(try eventually(15) { try sandbox.cli("get", "key_0").stdout == "v1\n" }, "\(daemon.log)")
        #expect(daemon.log.contains("The network changed; fetching (the last fetch failed)"), "\(daemon.log)")
        #expect(server.requests.count == 1)
        #expect(daemon.stop() == 0)
    }

    @Test func aNetworkChangeFetchesOnlyWhenStaleOrFailing() throws {
        let (sandbox, namespace, server) = try setUp()
        try namespace.loopback(up: true)
        let daemon = try DaemonProcess(sandbox, networkNamespace: namespace.name)
        try daemon.waitUntilReady()
        #expect(try eventually { try sandbox.cli("get", "key_0").stdout == "v1\n" }, "\(daemon.log)")
        let requests = server.requests.count

        // A fresh cache: the network going down and up again costs no request (the daemon says so
        // once the changes have settled).
        try namespace.loopback(up: false)
        try namespace.loopback(up: true)
        #expect(
            eventually { daemon.log.contains("The network changed; not fetching (the cache is fresh)") },
            "\(daemon.log)")
        #expect(server.requests.count == requests, "\(daemon.log)")

        // Stale, with the network down: the push's fetch fails; the network coming back fetches.
        try namespace.loopback(up: false)
        try server.serve(Sandbox.document(version: 2))
        #expect(try sandbox.cli("notify", #"{"data":{"CONFIG_STATE":"STALE"}}"#).status == 0)
        #expect(try eventually { try sandbox.cli("status").stdout.contains("last fetch:   failure") })
        try namespace.loopback(up: true)
        #expect(try eventually(15) { try sandbox.cli("get", "key_0").stdout == "v2\n" }, "\(daemon.log)")
        #expect(daemon.log.contains("The network changed; fetching (the cache is stale)"), "\(daemon.log)")
        #expect(daemon.stop() == 0)
    }
}
