import Foundation
import Glibc
import RCCore
import TestSupport
import Testing

/// `rcadmin fleet exporter` end to end: a real mosquitto holding the agents' retained reports, the
/// built exporter following them, and a real Prometheus (the test's own child, its own config,
/// port and data directory) scraping it every second, queried through its HTTP API.
@Suite(.timeLimit(.minutes(10))) struct FleetExporterTests {
    typealias Fleet = FleetStatusTests.Fleet

    /// A running exporter; its port from the line it writes once it listens.
    final class Exporter {
        let watch: FleetStatusTests.Watch
        let port: Int

        init(_ fleet: Fleet, _ arguments: [String] = []) throws {
            let watch = try FleetStatusTests.Watch(
                fleet.sandbox, ["fleet", "exporter", "--listen", "127.0.0.1:0", "--mqtt", fleet.url] + arguments)
            self.watch = watch
            let serving = /Serving the fleet's metrics on http:\/\/127\.0\.0\.1:(\d+)\/metrics/
            var port: Int?
            _ = eventually(60) {
                port = watch.stderr.firstMatch(of: serving).flatMap { Int($0.1) }
                return port != nil
            }
            guard let port else { throw TestFailure("the exporter did not start: \(watch.stderr)") }
            self.port = port
        }

        func scrape() -> String { LoopbackHTTP.get(port: port, "/metrics") }

        /// The page once the retained set is in (`rcagent_fleet_exporter_ready 1`).
        func readyPage() -> String {
            var page = ""
            _ = eventually(60) {
                page = scrape()
                return page.contains("\nrcagent_fleet_exporter_ready 1\n")
            }
            return page
        }
    }

    /// The rollout of FleetActivationTests (44 newest, rollbacks of 44 and 42, one deferred), a
    /// device whose version text is hostile to the exposition format, and `kW`, a device whose
    /// last will (its report with online false) the broker holds for it.
    static func publishFleet(_ fleet: Fleet) throws {
        try FleetActivationTests.publishFleet(fleet)
        try fleet.publish(FleetStatusTests.report("evil", "4\"5\n\\x} 1\n# x"))
        try fleet.publish(FleetStatusTests.report("kW", "44"))
    }

    /// A client of the broker that holds `kW`'s last will: killed, the broker publishes it.
    static func deviceWithALastWill(_ fleet: Fleet) throws -> FleetStatusTests.Watch {
        let offline = FleetStatusTests.report("kW", "44") { $0.online = false }.json.compactText
        let client = try FleetStatusTests.Watch(
            fleet.sandbox,
            [
                "-p", String(fleet.broker.port), "-i", "kW", "-t", "rcagent/status/kW", "--will-topic",
                "rcagent/status/kW", "--will-payload", offline, "--will-retain", "--will-qos", "1",
            ], executable: "/usr/bin/mosquitto_sub")
        // Connected and subscribed: it has printed kW's retained (online) report.
        guard eventually(30, { !client.lines.isEmpty }) else { throw TestFailure("mosquitto_sub: \(client.stderr)") }
        return client
    }

    @Test func aRealPrometheusScrapesTheFleetAndSeesADeviceGoOffline() throws {
        let fleet = try Fleet()
        try Self.publishFleet(fleet)
        let device = try Self.deviceWithALastWill(fleet)
        let exporter = try Exporter(fleet)
        let prometheus = try Prometheus(
            in: fleet.sandbox.root.appendingPathComponent("prometheus"), target: "127.0.0.1:\(exporter.port)")

        func value(_ query: String) -> Double? { prometheus.query(query).first?.value }
        #expect(
            eventually(120) { value(#"rcagent_fleet_devices{template_version="44"}"#) == 3 },
            "\(prometheus.query("rcagent_fleet_devices"))\n\(exporter.watch.stderr)")
        let versions = Dictionary(
            prometheus.query("rcagent_fleet_devices").map { ($0.labels["template_version"] ?? "", $0.value) },
            uniquingKeysWith: +)
        // The hostile text is one label value, exactly as the device wrote it.
        #expect(versions == ["44": 3, "43": 4, "4\"5\n\\x} 1\n# x": 1], "\(versions)")
        #expect(value(#"rcagent_fleet_rollbacks{template_version="44"}"#) == 2)
        #expect(value(#"rcagent_fleet_rollbacks{template_version="42"}"#) == 1)
        #expect(value(#"rcagent_fleet_devices_in_state{state="deferred"}"#) == 1)
        #expect(value(#"rcagent_fleet_devices_in_state{state="rolled_back"}"#) == 2)
        #expect(value(#"rcagent_fleet_devices_in_state{state="online"}"#) == 8)
        #expect(value(#"rcagent_fleet_devices_in_state{state="offline"}"#) == 0)
        #expect(value("rcagent_fleet_newest_template_version") == 44)
        #expect(value("rcagent_fleet_devices_on_newest_version") == 3)
        #expect(value("rcagent_fleet_reports_unreadable") == 0)
        #expect(value("rcagent_fleet_exporter_ready") == 1)
        #expect(value(#"up{job="rcagent_fleet"}"#) == 1)
        #expect((value("rcagent_fleet_reports_received_total") ?? 0) >= 8)
        // No series per device without --per-device.
        #expect(prometheus.query(#"{__name__=~"rcagent_fleet_device_.*"}"#).isEmpty)

        // The device dies: the broker publishes its last will, and Prometheus sees it offline.
        kill(device.process.pid, SIGKILL)
        #expect(
            eventually(60) { value(#"rcagent_fleet_devices_in_state{state="offline"}"#) == 1 },
            "\(exporter.scrape())")
        #expect(value(#"rcagent_fleet_devices_in_state{state="online"}"#) == 7)

        let result = exporter.watch.stop(SIGTERM)
        #expect(result.status == 0, "\(exporter.watch.stderr)")
    }

    @Test func thePageIsValidAndPerDeviceSeriesComeOnlyWhenAsked() throws {
        let fleet = try Fleet()
        try Self.publishFleet(fleet)
        try fleet.publish(raw: "{not json", topic: "rcagent/status/bad")
        try fleet.publish(FleetStatusTests.report("q\"uote\\d", "44"))
        let exporter = try Exporter(fleet, ["--per-device"])
        let page = LoopbackHTTP.body(exporter.readyPage())
        #expect(page.contains("\nrcagent_fleet_reports_unreadable 1\n"), "\(page)")
        #expect(page.contains(#"rcagent_fleet_devices{template_version="4\"5\n\\x} 1\n# x"} 1"#), "\(page)")
        #expect(page.contains(#"rcagent_fleet_device_online{device_id="k1"} 1"#), "\(page)")
        #expect(page.contains(#"rcagent_fleet_device_info{device_id="q\"uote\\d",template_version="44"} 1"#))
        // promtool, Prometheus' own linter, reads the page whole (names, escaping, types).
        let file = fleet.sandbox.root.appendingPathComponent("page.prom").path
        try page.write(toFile: file, atomically: true, encoding: .utf8)
        let lint = try runProcess("/bin/sh", ["-c", #"/usr/bin/promtool check metrics < "$0""#, file])
        #expect(lint.status == 0, "\(lint.stdout)\(lint.stderr)")
        #expect(exporter.watch.stop(SIGTERM).status == 0, "\(exporter.watch.stderr)")

        let plain = try Exporter(fleet)
        #expect(!plain.readyPage().contains("rcagent_fleet_device_"))
        #expect(plain.watch.stop(SIGTERM).status == 0)
    }

    @Test func aLostBrokerShowsAsDisconnectedUntilItIsBack() throws {
        let fleet = try Fleet()
        try fleet.publish(FleetStatusTests.report("k1", "7"))
        try fleet.publish(FleetStatusTests.report("k2", "7"))
        let exporter = try Exporter(fleet, ["--timeout", "60s"])
        #expect(exporter.readyPage().contains("\nrcagent_fleet_exporter_broker_connected 1\n"))
        fleet.broker.stop()
        // The last picture is still served, marked as such.
        #expect(
            eventually(60) {
                let page = exporter.scrape()
                return page.contains("\nrcagent_fleet_exporter_broker_connected 0\n")
                    && page.contains("\nrcagent_fleet_devices_reporting 2\n")
            }, "\(exporter.watch.stderr)")
        // Restarted without persistence the broker holds one report: the picture is rebuilt from it.
        try fleet.broker.start()
        try fleet.publish(FleetStatusTests.report("k2", "8"))
        #expect(
            eventually(60) {
                let page = exporter.scrape()
                return page.contains("\nrcagent_fleet_exporter_broker_connected 1\n")
                    && page.contains("\nrcagent_fleet_devices_reporting 1\n")
            }, "\(exporter.scrape())\n\(exporter.watch.stderr)")
        #expect(exporter.watch.stop(SIGTERM).status == 0, "\(exporter.watch.stderr)")
    }

    @Test func hostileClientsDoNotStopIt() throws {
        let fleet = try Fleet()
        try fleet.publish(FleetStatusTests.report("k1", "7"))
        let exporter = try Exporter(fleet)
        #expect(exporter.readyPage().contains("\nrcagent_fleet_devices_reporting 1\n"))
        let port = exporter.port

        // Garbage, a request line without a version, a body on a method not served, an unknown
        // path, headers far over the limit: each answered or closed, none answered with the page.
        for garbage in ["\u{0}\u{1}\u{2}garbage\r\n\r\n", "GET /metrics\r\n\r\n", "\r\n\r\n\r\n"] {
            #expect(
                !LoopbackHTTP.exchange(port: port, garbage).contains("rcagent_fleet"), "\(garbage.debugDescription)")
        }
        let post = LoopbackHTTP.exchange(
            port: port, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
        #expect(post.hasPrefix("HTTP/1.1 405 ") && post.contains("\r\nAllow: GET, HEAD\r\n"), "\(post)")
        #expect(LoopbackHTTP.get(port: port, "/elsewhere").contains(" 404 Not Found\r\n"))
        #expect(LoopbackHTTP.body(LoopbackHTTP.get(port: port, "/")).contains("/metrics"))
        let huge =
            "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Padding: " + String(repeating: "a", count: 200_000) + "\r\n\r\n"
        let refused = LoopbackHTTP.exchange(port: port, huge)
        #expect(!refused.contains("rcagent_fleet"), "\(refused.prefix(200))")

        // Slow clients holding connections: half a request each, never finished. A scrape is
        // still answered at once (one thread polls them all; none holds it).
        var held: [Int32] = []
        defer { held.forEach { close($0) } }
        for _ in 0..<100 {
            let fd = LoopbackHTTP.connect(port: port)
            if fd >= 0 {
                LoopbackHTTP.send(fd, Array("GET /metr".utf8))
                held.append(fd)
            }
        }
        #expect(held.count == 100)
        #expect(exporter.scrape().contains("\nrcagent_fleet_devices_reporting 1\n"))

        // Past the connection limit (128) new connections wait in the kernel's listen queue until
        // the idle timeout (10 s) ends the slow ones: then they are answered.
        for _ in 0..<100 {
            let fd = LoopbackHTTP.connect(port: port)
            if fd >= 0 { held.append(fd) }
        }
        #expect(
            eventually(60) { exporter.scrape().contains("\nrcagent_fleet_devices_reporting 1\n") },
            "\(exporter.watch.stderr)")
        // SIGTERM ends it promptly, connections open or not.
        let started = ContinuousClock.now
        #expect(exporter.watch.stop(SIGTERM).status == 0, "\(exporter.watch.stderr)")
        #expect(ContinuousClock.now - started < .seconds(10))
    }

    @Test func drippingClientsAreCutAtTheRequestDeadline() throws {
        let fleet = try Fleet()
        try fleet.publish(FleetStatusTests.report("k1", "7"))
        let exporter = try Exporter(fleet)
        #expect(exporter.readyPage().contains("\nrcagent_fleet_devices_reporting 1\n"))

        // Every connection the exporter takes (128), each dripping a byte of an endless header
        // every 2 s: progress, which resets libmicrohttpd's 10 s idle timeout, so without a
        // deadline of their own they held every connection for a day and no scrape got through.
        var held = (0..<128).map { _ in LoopbackHTTP.connect(port: exporter.port) }.filter { $0 >= 0 }
        defer { held.forEach { close($0) } }
        #expect(held.count == 128)
        let header = Array("GET /metrics HTTP/1.1\r\nHost: x\r\nX-Padding: ".utf8) + Array(repeating: 97, count: 30_000)
        var open = Set(held)
        let started = ContinuousClock.now
        for byte in header.prefix(60) where !open.isEmpty {
            // Waits up to 2 s for the server to end any of them (end of file), then drips.
            var fds = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            _ = poll(&fds, nfds_t(fds.count), 2_000)
            for entry in fds where entry.revents != 0 {
                var scratch = [UInt8](repeating: 0, count: 64)
                if recv(entry.fd, &scratch, scratch.count, Int32(MSG_DONTWAIT)) <= 0 { open.remove(entry.fd) }
            }
            for fd in open { _ = LoopbackHTTP.send(fd, [byte]) }
        }
        #expect(open.isEmpty, "\(open.count) dripping connections still open after \(ContinuousClock.now - started)")
        #expect(exporter.scrape().contains("\nrcagent_fleet_devices_reporting 1\n"), "\(exporter.watch.stderr)")
        held.forEach { close($0) }
        held = []
    }

    @Test func listenAddressesAreCheckedAndIPv6Served() throws {
        let fleet = try Fleet()
        for (address, reason) in [
            ("localhost:9800", "'localhost' is not an IPv4 address"), ("127.0.0.1", "no :PORT"),
            ("127.0.0.1:65536", "the port must be a number from 0 to 65535"), ("::1:9800", "[ADDRESS]:PORT"),
            ("[::1]9800", "[ADDRESS]:PORT"), ("[127.0.0.1]:80", "is not an IPv6 address"),
            ("1.2.3.4.5:80", "is not an IPv4 address"), ("127.0.0.1:-1", "the port must be"),
        ] {
            let result = try fleet.sandbox.run(
                "rcadmin", ["fleet", "exporter", "--listen", address, "--mqtt", fleet.url])
            #expect(result.status == 64, "\(address): \(result.stderr)")
            #expect(result.stderr.contains("--listen must be ADDRESS:PORT"), "\(result.stderr)")
            #expect(result.stderr.contains(reason), "\(address): \(result.stderr)")
        }
        let noListen = try fleet.sandbox.run("rcadmin", ["fleet", "exporter", "--mqtt", fleet.url])
        #expect(noListen.status == 64 && noListen.stderr.contains("--listen ADDRESS:PORT is required"))
        let noBroker = try fleet.sandbox.run("rcadmin", ["fleet", "exporter", "--listen", "127.0.0.1:0"])
        #expect(noBroker.status == 64 && noBroker.stderr.contains("--mqtt URL is required"))

        // A port in use: a clear failure, before any MQTT.
        let taken = try SilentListener()
        let busy = try fleet.sandbox.run(
            "rcadmin", ["fleet", "exporter", "--listen", "127.0.0.1:\(taken.port)", "--mqtt", fleet.url])
        #expect(busy.status == 1, "\(busy.stderr)")
        #expect(
            busy.stderr == "Error: cannot listen on 127.0.0.1:\(taken.port): bind: Address already in use\n",
            "\(busy.stderr)")

        // A broker that cannot be reached: exit 1, said once, the HTTP server stopped with it.
        let closed = try RefusingPort()
        defer { withExtendedLifetime(closed) {} }  // held until the test ends
        let down = try fleet.sandbox.run(
            "rcadmin", ["fleet", "exporter", "--listen", "127.0.0.1:0", "--mqtt", "mqtt://127.0.0.1:\(closed.port)"])
        #expect(down.status == 1, "\(down.stderr)")
        #expect(
            down.stderr.hasSuffix(
                "Error: cannot reach the MQTT broker at 127.0.0.1:\(closed.port): Connection refused\n"),
            "\(down.stderr)")

        let v6 = try FleetStatusTests.Watch(
            fleet.sandbox, ["fleet", "exporter", "--listen", "[::1]:0", "--mqtt", fleet.url])
        #expect(
            eventually(60) { v6.stderr.contains("Serving the fleet's metrics on http://[::1]:") }, "\(v6.stderr)")
        #expect(v6.stop(SIGTERM).status == 0, "\(v6.stderr)")
    }
}
