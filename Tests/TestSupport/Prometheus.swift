import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A real Prometheus server (Debian's `prometheus`) scraping one target every second: the test's
/// own child with its own config, port and data directory in `directory`, never the package's
/// service, killed by its pid. Queried through its HTTP API, as Grafana or an operator would.
public final class Prometheus {
    public let port: Int
    private let process: Process

    /// Scrapes `target` (`127.0.0.1:PORT`) at `/metrics` every second.
    public init(in directory: URL, target: String) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let config = """
            global:
              scrape_interval: 1s
              scrape_timeout: 1s
            scrape_configs:
              - job_name: rcagent_fleet
                static_configs:
                  - targets: ['\(target)']
            """
        let configPath = directory.appendingPathComponent("prometheus.yml").path
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        port = try Mosquitto.freePort()
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/prometheus")
        process.arguments = [
            "--config.file=\(configPath)", "--storage.tsdb.path=\(directory.appendingPathComponent("data").path)",
            "--web.listen-address=127.0.0.1:\(port)", "--log.level=warn",
        ]
        process.standardOutput = FileHandle.nullDevice
        let log = directory.appendingPathComponent("prometheus.log")
        // An empty log to write to (FileHandle(forWritingTo:) opens, never creates); if it cannot be
        // made, the open below fails and says so.
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
        guard eventually(60, { LoopbackHTTP.get(port: port, "/-/ready").contains(" 200 ") }) else {
            throw TestFailure(
                "prometheus did not become ready: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        }
    }

    deinit {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// One series of an instant query's result: its labels and its value.
    public struct Series: Sendable {
        public let labels: [String: String]
        public let value: Double
    }

    /// The result of the instant query `promql` now (`/api/v1/query`); empty when there is none yet.
    public func query(_ promql: String) -> [Series] {
        let allowed = CharacterSet.alphanumerics
        let encoded = promql.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
        let body = LoopbackHTTP.body(LoopbackHTTP.get(port: port, "/api/v1/query?query=\(encoded)"))
        guard let document = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
            let data = document["data"] as? [String: Any], let result = data["result"] as? [[String: Any]]
        else { return [] }
        return result.compactMap { entry in
            guard let labels = entry["metric"] as? [String: String], let pair = entry["value"] as? [Any],
                pair.count == 2, let text = pair[1] as? String, let value = Double(text)
            else { return nil }
            return Series(labels: labels, value: value)
        }
    }
}
