import Foundation
import TestSupport
import Testing

/// What the security suites check after a hostile input: the daemon runs and answers a ping, the last good
/// value is served, and the owner's commands work.
func expectDaemonKeptItsState(_ sandbox: Sandbox, _ daemon: DaemonProcess, value: String = "v1") throws {
    #expect(daemon.process.isRunning, "\(daemon.log)")
    let client = try SocketClient(path: sandbox.socketPath)
    #expect(client.request(#"{"op":"ping"}"#)?["ok"] as? Bool == true)
    #expect(try sandbox.cli("get", "key_0").stdout == value + "\n")
    let status = try sandbox.cli("status", "--json")
    #expect(status.status == 0 && status.stdout.contains(#""running":true"#), "\(status.stdout)\(status.stderr)")
    #expect(try sandbox.cli("mark-stale", "--reason", "owner").status == 0)
}

/// A forced fetch of `document` from a file source fails naming `reason`, and the daemon keeps its state.
/// Returns how long the fetch took (a failure bound some callers check).
@discardableResult
func expectFileFetchRefuses(_ document: String, saying reason: String) throws -> TimeInterval {
    let sandbox = try Sandbox()
    let daemon = try sandbox.startServing()
    try sandbox.publish(document)
    let started = Date()
    let fetch = try sandbox.cli("fetch", "--force", "--wait")
    let took = Date().timeIntervalSince(started)
    #expect(fetch.status == 1)
    #expect(fetch.stderr.contains(reason), "\(fetch.stderr)")
    try expectDaemonKeptItsState(sandbox, daemon)
    daemon.stop()
    return took
}

/// A forced fetch of `document` from an http source fails naming `reason`, and the daemon keeps its state.
func expectHTTPFetchRefuses(_ document: String, saying reason: String) throws {
    let sandbox = try Sandbox()
    let server = try ConfigServer(in: sandbox)
    try sandbox.writeConfig(extra: "[Source]\nType=http\nURL=\(server.url)")
    try server.serve(Sandbox.document(version: 1), etag: "\"v1\"")
    let daemon = try sandbox.startDaemon()
    #expect(try eventually { try sandbox.cli("get", "key_0").stdout == "v1\n" })
    try server.serve(document, etag: "\"hostile\"")
    let fetch = try sandbox.cli("fetch", "--force", "--wait")
    #expect(fetch.status == 1)
    #expect(fetch.stderr.contains(reason), "\(fetch.stderr)")
    try expectDaemonKeptItsState(sandbox, daemon)
    daemon.stop()
}

/// The stale flag's reason as `rcagent status --json` reports it (nil when not set).
func staleReason(_ sandbox: Sandbox) throws -> String? {
    let json = try sandbox.cli("status", "--json").stdout
    let status = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
    let stale = status?["stale"] as? [String: Any]
    return stale?["set"] as? Bool == true ? stale?["reason"] as? String : nil
}

/// Runs `rcagent ARGS --config` as uid/gid 65534 with exactly `groups` as supplementary groups.
func asNobody(_ sandbox: Sandbox, groups: [UInt32], _ arguments: String...) throws -> ProcessResult {
    let groupOption = groups.isEmpty ? "--clear-groups" : "--groups=" + groups.map(String.init).joined(separator: ",")
    return try sandbox.run(
        "/usr/bin/setpriv",
        ["--reuid=65534", "--regid=65534", groupOption, Binaries.url("rcagent").path] + arguments + [
            "--config", sandbox.configPath,
        ])
}
