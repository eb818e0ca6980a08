import Foundation
import Glibc
import RCCore
import TestSupport
import Testing

/// `[Report] MetricsFile=` end to end: the daemon's file, linted by Prometheus' `promtool check
/// metrics`, and read by a real node_exporter (`prometheus-node-exporter`, its textfile collector
/// only, started by the test on a port of its own, never the package's service), scraped over HTTP
/// after an activation and after a stale ping.
@Suite(.timeLimit(.minutes(10))) struct MetricsFileTests {
    /// A node_exporter reading `directory`'s `*.prom` files, on a loopback port.
    final class NodeExporter {
        let process: Subprocess
        let port: Int

        init(directory: String) throws {
            port = try Mosquitto.freePort()
            process = try Subprocess(
                "/usr/bin/prometheus-node-exporter",
                [
                    "--web.listen-address=127.0.0.1:\(port)", "--collector.disable-defaults", "--collector.textfile",
                    "--collector.textfile.directory=\(directory)",
                ])
            guard eventually(15, { Mosquitto.accepts(port: port) }) else {
                kill(process.pid, SIGKILL)
                throw TestFailure("node_exporter did not listen: \(process.finish().stderr)")
            }
        }

        /// The exporter's `/metrics` page.
        func scrape() throws -> String {
            let result = try runProcess(
                "/usr/bin/curl", ["-sS", "--max-time", "10", "http://127.0.0.1:\(port)/metrics"])
            guard result.status == 0 else { throw TestFailure("curl failed: \(result.stderr)") }
            return result.stdout
        }

        deinit {
            kill(process.pid, SIGTERM)
            _ = process.finish()
        }
    }

    /// The sample lines of `page` (no comments).
    static func samples(_ page: String) -> [String] {
        page.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("#") }
    }

    /// The value of the unlabelled sample `name` (node_exporter writes numbers as Go does: `1.7e+09`).
    static func value(_ name: String, in samples: [String]) -> Double? {
        samples.first { $0.hasPrefix(name + " ") }.flatMap { Double($0.dropFirst(name.count + 1)) }
    }

    @Test func nodeExporterReadsTheDaemonsMetricsAfterAnActivationAndAStalePing() throws {
        let sandbox = try Sandbox()
        // As fleet.md has it: the file in the daemon's state directory, a link to it in the
        // collector's directory (the hardened unit may write nowhere else).
        let textfiles = sandbox.root.appendingPathComponent("textfile").path
        try FileManager.default.createDirectory(atPath: textfiles, withIntermediateDirectories: true)
        let metricsFile = sandbox.statePath + "/rcagent.prom"
        #expect(symlink(metricsFile, textfiles + "/rcagent.prom") == 0)
        try sandbox.writeConfig(extra: "[Report]\nMetricsFile=\(metricsFile)\n")
        let daemon = try sandbox.startServing(version: 7)
        defer { _ = daemon.stop() }

        // Written at start and again after the activation.
        #expect(
            eventually {
                (try? String(contentsOfFile: metricsFile, encoding: .utf8))?.contains("rcagent_template_version 7\n")
                    == true
            },
            "\(daemon.log)")
        var info = stat()
        #expect(stat(metricsFile, &info) == 0 && info.st_mode & 0o777 == 0o644)
        // No temporary file is left beside it (node_exporter reads only `*.prom`, but still).
        let left = try FileManager.default.contentsOfDirectory(atPath: sandbox.statePath)
        #expect(!left.contains { $0.contains(".tmp-") }, "\(left)")
        let lint = try runProcess("/bin/sh", ["-c", "promtool check metrics < \"$0\"", metricsFile])
        #expect(lint.status == 0, "\(lint.stdout)\(lint.stderr)")

        let exporter = try NodeExporter(directory: textfiles)
        let page = try exporter.scrape()
        let samples = Self.samples(page)
        for line in [
            "rcagent_template_version 7", "rcagent_stale 0", "rcagent_activations_total 1", "rcagent_rollbacks_total 0",
            "rcagent_activation_deferred 0", #"rcagent_fetches_total{result="success"} 1"#,
            #"rcagent_last_fetch_result{result="success"} 1"#, #"rcagent_template_info{template_version="7"} 1"#,
            "node_textfile_scrape_error 0",
        ] {
            #expect(samples.contains(line), "\(line) not in:\n\(page)")
        }
        #expect(Self.value("rcagent_last_fetch_success_timestamp_seconds", in: samples) ?? 0 > 1.7e9, "\(page)")
        #expect(samples.contains { $0.hasPrefix("rcagent_build_info{version=") }, "\(page)")

        // The source breaks, then a stale ping: the flag stays set and the failed fetch is counted.
        try sandbox.publish("{ not json")
        #expect(try sandbox.cli("mark-stale", "--reason", "metrics test").status == 0)
        var stalePage = ""
        #expect(
            eventually {
                stalePage = (try? exporter.scrape()) ?? ""
                let samples = Self.samples(stalePage)
                return samples.contains("rcagent_stale 1") && samples.contains("rcagent_stale_marks_total 1")
                    && samples.contains(#"rcagent_last_fetch_result{result="failure"} 1"#)
                    // The file watch's fetch and the ping's, or one of them while the other backs off.
                    && samples.contains {
                        $0.hasPrefix(#"rcagent_fetches_total{result="failure"} "#) && !$0.hasSuffix(" 0")
                    }
            }, "\(stalePage)\n\(daemon.log)")
        #expect(Self.value("rcagent_stale_since_timestamp_seconds", in: Self.samples(stalePage)) ?? 0 > 1.7e9)
        #expect(Self.samples(stalePage).contains("rcagent_template_version 7"))
        #expect(Self.samples(stalePage).contains("node_textfile_scrape_error 0"), "\(stalePage)")
        #expect(daemon.stop() == 0)
    }

    /// Label values and help text from hostile sources (the fleet exporter's versions and device
    /// ids): node_exporter (Go's own parser and encoder) reads ``PrometheusText``'s escaping back to
    /// the same values, and re-escapes them to the very same sample lines.
    @Test func hostileLabelValuesRoundTripThroughNodeExporter() throws {
        try TemporaryDirectory.with { directory in
            let values = [
                "9\"} 1\nrcagent_stale 1", "\\n", "\\\"", "\"\u{301}", "a\rb\tc", "\u{1b}[2J", "👩‍💻 é", "{x=\"y\"}", "",
                "trailing\\", "\n\n",
            ]
            let family = MetricFamily(
                name: "rcagent_test_hostile", help: "Help with \"quotes\", \\ and\nlines.", kind: .gauge,
                samples: values.enumerated().map {
                    MetricSample(
                        labels: [("index", String($0.offset)), ("value", $0.element)], value: Double($0.offset))
                })
            let text = PrometheusText.render([family])
            _ = try directory.write("hostile.prom", text)
            let exporter = try NodeExporter(directory: directory.path)
            let page = try exporter.scrape()
            let samples = Self.samples(page)
            #expect(samples.contains("node_textfile_scrape_error 0"), "\(page)")
            for line in Self.samples(text) {
                #expect(samples.contains(line), "\(line) not in:\n\(page)")
            }
            #expect(page.contains("# HELP rcagent_test_hostile Help with \"quotes\", \\\\ and\\nlines.\n"), "\(page)")
        }
    }

    /// A directory that does not exist: the daemon runs on, says so once, and writes the file once
    /// the directory is there (the retry, or the next change).
    @Test func aMissingDirectoryIsLoggedAndTheDaemonRunsOn() throws {
        let sandbox = try Sandbox()
        let textfiles = sandbox.root.appendingPathComponent("later").path
        let metricsFile = textfiles + "/rcagent.prom"
        try sandbox.writeConfig(extra: "[Report]\nMetricsFile=\(metricsFile)\n")
        let daemon = try sandbox.startServing(version: 3)
        defer { _ = daemon.stop() }
        #expect(eventually { daemon.log.contains("Failed to write the metrics to \(metricsFile)") }, "\(daemon.log)")
        #expect(try sandbox.cli("get", "key_0").stdout == "v3\n")
        let doctor = try sandbox.cli("doctor")
        #expect(doctor.stdout.contains("\(metricsFile): the directory \(textfiles) does not exist"), "\(doctor.stdout)")
        try FileManager.default.createDirectory(atPath: textfiles, withIntermediateDirectories: true)
        try sandbox.publish(Sandbox.document(version: 4))
        #expect(try sandbox.cli("fetch", "--wait").status == 0)
        #expect(
            eventually {
                (try? String(contentsOfFile: metricsFile, encoding: .utf8))?.contains("rcagent_template_version 4\n")
                    == true
            },
            "\(daemon.log)")
        #expect(daemon.log.components(separatedBy: "Failed to write the metrics").count == 2, "\(daemon.log)")
        #expect(try sandbox.cli("doctor").stdout.contains("\(metricsFile) written "))
        #expect(daemon.stop() == 0)
    }

    /// Safe activation in the file: a trial that passes ends (`rcagent_activation_trial 0`, though its
    /// commit logs no event), one that fails is a rollback and a rejected version.
    @Test func trialsAndRollbacksShowInTheFile() throws {
        let sandbox = try Sandbox()
        let metricsFile = sandbox.root.appendingPathComponent("rcagent.prom").path
        let check = sandbox.root.appendingPathComponent("check").path
        let failing = sandbox.root.appendingPathComponent("failing").path
        // The check answers after the fetch round has ended (and said all it had to say).
        try "#!/bin/sh\nsleep 1\n[ ! -e \(failing) ]\n".write(toFile: check, atomically: true, encoding: .utf8)
        chmod(check, 0o755)
        try sandbox.writeConfig(extra: "[Report]\nMetricsFile=\(metricsFile)\n[Activation]\nHealthCheck=\(check)\n")
        func samples() -> [String] {
            Self.samples((try? String(contentsOfFile: metricsFile, encoding: .utf8)) ?? "")
        }
        let daemon = try sandbox.startServing(version: 1)
        defer { _ = daemon.stop() }
        #expect(
            eventually {
                let now = samples()
                return now.contains("rcagent_template_version 1") && now.contains("rcagent_activation_trial 0")
                    && now.contains("rcagent_activations_total 1")
            }, "\(samples())\n\(daemon.log)")

        try #require(FileManager.default.createFile(atPath: failing, contents: nil))
        try sandbox.publish(Sandbox.document(version: 2))
        #expect(try sandbox.cli("fetch", "--wait").status == 0)
        #expect(
            eventually {
                let now = samples()
                return now.contains("rcagent_rollbacks_total 1") && now.contains("rcagent_rejected_versions 1")
                    && now.contains("rcagent_template_version 1") && now.contains("rcagent_activation_trial 0")
                    && now.contains("rcagent_activations_total 2")
            }, "\(samples())\n\(daemon.log)")
        #expect(Self.value("rcagent_last_rollback_timestamp_seconds", in: samples()) ?? 0 > 1.7e9)
        #expect(daemon.stop() == 0)
    }

    /// A reload that moves the file writes the new one and removes the old one (node_exporter would
    /// go on showing the device frozen); one that drops MetricsFile= removes it.
    @Test func aReloadMovesTheFileAndRemovesTheOldOne() throws {
        let sandbox = try Sandbox()
        let first = sandbox.root.appendingPathComponent("first.prom").path
        let second = sandbox.root.appendingPathComponent("second.prom").path
        try sandbox.writeConfig(extra: "[Report]\nMetricsFile=\(first)\n")
        let daemon = try sandbox.startServing(version: 5)
        defer { _ = daemon.stop() }
        #expect(eventually { FileManager.default.fileExists(atPath: first) }, "\(daemon.log)")
        try sandbox.writeConfig(extra: "[Report]\nMetricsFile=\(second)\n")
        let reload = try sandbox.cli("reload")
        #expect(reload.status == 0, "\(reload.stdout)\(reload.stderr)")
        #expect(
            eventually {
                !FileManager.default.fileExists(atPath: first)
                    && ((try? String(contentsOfFile: second, encoding: .utf8)) ?? "").contains(
                        "rcagent_template_version 5\n")
            }, "\(daemon.log)")
        try sandbox.writeConfig()
        #expect(try sandbox.cli("reload").status == 0)
        #expect(eventually { !FileManager.default.fileExists(atPath: second) }, "\(daemon.log)")
        #expect(daemon.stop() == 0)
    }

    @Test func aRelativeMetricsFileIsAConfigErrorWithItsLine() throws {
        let sandbox = try Sandbox()
        try sandbox.writeConfig(extra: "[Report]\nMetricsFile=metrics.prom\n")
        let check = try sandbox.cli("doctor")
        #expect(
            check.stdout.contains("MetricsFile= must be an absolute path")
                || check.stderr.contains("MetricsFile= must be an absolute path"), "\(check.stdout)\(check.stderr)")
        #expect((check.stdout + check.stderr).contains("agent.conf:"), "\(check.stdout)\(check.stderr)")
    }
}
