import Foundation
import Glibc
import RCCore
import TestSupport
import Testing

/// `rcadmin fleet status --watch` on a terminal: a pseudo-terminal made by python's pty module
/// (200 columns), the built binary writing to it, a real mosquitto with the reports. The script
/// waits for each expected text in what the terminal got (the events), publishes the next report
/// in between, then sends SIGTERM and hands back everything the terminal received. (Not a
/// terminal, the watch writes plain lines: FleetStatusTests.)
@Suite(.timeLimit(.minutes(10))) struct FleetWatchTerminalTests {
    static let script = #"""
        import json, os, pty, select, signal, struct, subprocess, sys, time, fcntl, termios
        rcadmin, url, port, topic, payload, first, second = sys.argv[1:8]
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 200, 0, 0))
        child = subprocess.Popen([rcadmin, "fleet", "status", "--mqtt", url, "--watch"], stdin=subprocess.DEVNULL,
                                 stdout=slave, stderr=subprocess.PIPE)
        os.close(slave)
        out = b""
        def read(until, seconds):
            global out
            deadline = time.time() + seconds
            while (until is None or until.encode() not in out) and time.time() < deadline:
                ready, _, _ = select.select([master], [], [], 0.2)
                if ready:
                    try:
                        chunk = os.read(master, 65536)
                    except OSError:
                        return
                    if not chunk:
                        return
                    out += chunk
        read(first, 60)
        subprocess.run(["mosquitto_pub", "-p", port, "-q", "1", "-r", "-t", topic, "-m", payload], check=True)
        read(second, 60)
        child.send_signal(signal.SIGTERM)
        status = child.wait(timeout=60)
        read(None, 1)
        print(json.dumps({"status": status, "output": out.decode("utf-8", "replace"),
                          "stderr": child.stderr.read().decode("utf-8", "replace")}))
        """#

    @Test func aTerminalGetsOneProgressLineRedrawnInPlace() throws {
        let fleet = try FleetStatusTests.Fleet()
        for n in 1...3 { try fleet.publish(FleetStatusTests.report("k\(n)", "42")) }
        let next = FleetStatusTests.report("k1", "43").json.compactText
        let result = try runProcess(
            "/usr/bin/python3",
            [
                "-c", Self.script, Binaries.url("rcadmin").path, fleet.url, String(fleet.broker.port),
                "rcagent/status/k1", next, "v42 on 3/3 online", "v43 on 1/3 online",
            ])
        #expect(result.status == 0, "\(result.stderr)")
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout)")
        let output = try #require(document["output"] as? String)
        #expect(document["status"] as? Int == 0, "\(document["stderr"] ?? "")")
        let redraw = "\r\u{1b}[2K"
        // Each picture is drawn over the last: back to the line's start, cleared, no newline.
        let draws = output.components(separatedBy: redraw).dropFirst()
        let time = #/^\d\d:\d\d:\d\d /#
        #expect(draws.count >= 2, "\(output.debugDescription)")
        #expect(draws.allSatisfy { $0.firstMatch(of: time) != nil }, "\(output.debugDescription)")
        #expect(
            draws.first.map { $0.dropFirst(9).hasPrefix("v42 on 3/3 online · rolled back 0 · stale 0 · offline 0") }
                == true, "\(output.debugDescription)")
        #expect(
            draws.last.map { $0.dropFirst(9) == "v43 on 1/3 online · rolled back 0 · stale 0 · offline 0\r\n" }
                == true, "the last picture, then one newline at the end: \(output.debugDescription)")
        // The only line break is the one written at the end (the terminal shows \n as \r\n).
        #expect(output.unicodeScalars.filter { $0 == "\n" }.count == 1, "\(output.debugDescription)")
    }
}
