import Foundation
import Glibc
import RCCore
import TestSupport
import Testing

/// Unicode that made Swift's normalizing string comparison cost seconds (issue 25, item 2), and
/// look-alike ids that stood in for real ones (item 9), each through the channel an attacker would
/// use. What must hold: the hostile input is refused by name, the daemon answers afterwards and
/// serves its last good values; look-alikes stay apart.
@Suite struct SecurityUnicodeTests {
    /// "a" and `count` combining marks of descending classes: normalizing them reorders at every step.
    static func marks(_ count: Int) -> String {
        let cycle: [Unicode.Scalar] = ["\u{345}", "\u{35C}", "\u{301}", "\u{316}", "\u{327}"]
        var text = "a"
        for index in 0..<count { text.unicodeScalars.append(cycle[index % cycle.count]) }
        return text
    }

    /// A document whose one member name is 100 KB of combining marks (minutes of CPU a fetch before).
    static let marksDocument =
        #"{"state":"UPDATE","templateVersion":"2","entries":{"key_0":"v2",""# + marks(50_000) + #"":"x"}}"#

    @Test func aMemberNameOfCombiningMarksOnTheSocketIsRefused() throws {
        let sandbox = try Sandbox()
        let daemon = try sandbox.startServing()
        let client = try SocketClient(path: sandbox.socketPath)
        for line in [
            #"{"op":"message","message":{"data":{"CONFIG_STATE":"STALE",""# + Self.marks(30_000) + #"":"x"}}}"#,
            #"{"op":"message","message":{"data":{"CONFIG_STATE":"STALE","x":""# + Self.marks(30_000) + #""}}}"#,
        ] {
            #expect(client.write(line + "\n"))
            let response = try #require(client.readLine(timeout: 60), "no answer; log:\n\(daemon.log)")
            #expect(response.contains(#""ok":false"#), "\(response)")
            #expect(response.contains("more than 30 combining marks in a row"), "\(response)")
        }
        try expectDaemonKeptItsState(sandbox, daemon)
        daemon.stop()
    }

    @Test func aMemberNameOfCombiningMarksFailsAFileFetchByName() throws {
        try expectFileFetchRefuses(Self.marksDocument, saying: "more than 30 combining marks in a row at line 1")
    }

    @Test func aMemberNameOfCombiningMarksFailsAnHTTPFetchByName() throws {
        try expectHTTPFetchRefuses(Self.marksDocument, saying: "more than 30 combining marks in a row")
    }

    /// What stays accepted: 30 marks in a row, and look-alike values, kept as their exact bytes.
    @Test func lookAlikeKeysAndValuesAreKeptAsTheirBytes() throws {
        let sandbox = try Sandbox()
        let daemon = try sandbox.startServing()
        let thirty = Self.marks(30)
        try sandbox.publish(
            #"{"state":"UPDATE","templateVersion":"2","entries":{"key_0":"v2","kelvin":"\u212a","k":"K","#
                + #""nfd":"cafe\u0301",""# + thirty + #"":""# + thirty + #""}}"#)
        let fetch = try sandbox.cli("fetch", "--force", "--wait")
        #expect(fetch.status == 0, "\(fetch.stderr)")
        #expect(Array(try sandbox.cli("get", "kelvin").stdout.utf8) == Array("\u{212A}\n".utf8))
        #expect(Array(try sandbox.cli("get", "k").stdout.utf8) == Array("K\n".utf8))
        #expect(Array(try sandbox.cli("get", "nfd").stdout.utf8) == Array("cafe\u{301}\n".utf8))
        #expect(Array(try sandbox.cli("get", thirty).stdout.utf8) == Array((thirty + "\n").utf8))
        // Canonically equivalent names in one document: the agent's maps cannot keep them apart.
        try sandbox.publish(#"{"state":"UPDATE","templateVersion":"3","entries":{"K":"1","\u212a":"2"}}"#)
        let refused = try sandbox.cli("fetch", "--force", "--wait")
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("different Unicode normalization forms"), "\(refused.stderr)")
        try expectDaemonKeptItsState(sandbox, daemon, value: "v2")
        daemon.stop()
    }

    /// A report on a topic with U+212A KELVIN SIGN in place of `K` replaced the real device's: the
    /// lagging device was shown up to date. By bytes, they are two topics.
    @Test func fleetStatusKeepsLookAlikeDevicesApart() throws {
        let fleet = try FleetStatusTests.Fleet()
        let t0 = FleetStatusTests.t0
        try fleet.publish(.sample("devK1", "41", at: t0))
        try fleet.publish(.sample("devK2", "43", at: t0))
        // The look-alike's report names itself; another names the real device on the look-alike topic.
        try fleet.publish(.sample("dev\u{212A}1", "43", at: t0))
        try fleet.publish(
            raw: DeviceReport.sample("devK2", "43", at: t0).json.compactText, topic: "rcagent/status/dev\u{212A}2")
        // A level that starts with a combining mark is counted like any other.
        try fleet.publish(.sample("\u{301}dev3", "43", at: t0))
        let result = try fleet.status(["--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let json = try JSONValue.parse(result.stdout)
        #expect(json["counts"]?["devices"] == .integer(4), "\(result.stdout)")
        // The real devK1 stays on 41: lagging, whatever its look-alike reports.
        #expect(json["lists"]?["lagging"] == .array([.string("devK1")]), "\(result.stdout)")
        #expect(json["counts"]?["unreadable"] == .integer(1), "\(result.stdout)")
        #expect(json["unreadable"]?.compactText.contains("is not the topic's last level") == true, "\(result.stdout)")
    }
}
