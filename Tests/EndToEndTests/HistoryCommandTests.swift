import Foundation
import RCCore
import RCStore
import TestSupport
import Testing

/// `rcagent history` over a real state database, and the window line it prints, from real processes
/// whose clock libfaketime sets (the nights Berlin's clocks change, a zone named and the local one).
@Suite struct HistoryCommandTests {
    private func at(_ seconds: Int64) -> Timestamp { Timestamp(milliseconds: 1_700_000_000_000 + seconds * 1_000) }

    @Test func historyListsTheKeptSnapshotsNewestFirstWithTheirOutcome() throws {
        let sandbox = try Sandbox()
        try FileManager.default.createDirectory(atPath: sandbox.statePath, withIntermediateDirectories: true)
        do {
            let store = try StateStore.openForWriting(path: sandbox.databasePath)
            try store.recordFetch(
                .update(values: ["url": "good"], templateVersion: "1", etag: nil), at: at(1), activate: false)
            try store.activateRecorded(at: at(1), keep: 20)
            try store.recordFetch(
                .update(values: ["url": "bad"], templateVersion: "2", etag: nil), at: at(2), activate: false)
            try store.activateRecorded(at: at(2), keep: 20, trialDeadline: at(62))
            try store.rollBackTrial(.healthCheckFailed(exitCode: 3), at: at(3))
        }
        let json = try sandbox.cli("history", "--json")
        #expect(json.status == 0, "\(json.stderr)")
        let entries = try #require(
            try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]], "\(json.stdout)")
        #expect(entries.map { $0["templateVersion"] as? String } == ["2", "1"])
        #expect(entries.map { $0["outcome"] as? String } == ["rolled-back: health check failed (exit 3)", "active"])
        #expect(entries.first?["activatedAt"] as? String == at(2).iso8601)
        #expect(entries.first?["source"] as? String == "fetch")
        #expect(entries.first?["changedKeys"] as? Int == 1)

        let text = try sandbox.cli("history")
        #expect(
            text.stdout.contains("2  \(at(2).iso8601)  fetch  1 changed  rolled-back: health check failed (exit 3)\n"))
        #expect(text.stdout.contains("rejected: 2\n"))
        #expect(!text.stdout.contains("window:"))
    }

    @Test func historyOnADeviceThatNeverActivatedSaysSo() throws {
        let sandbox = try Sandbox()
        let result = try sandbox.cli("history")
        #expect(result.status == 0)
        #expect(result.stdout == "no activations recorded\n")
        #expect(try sandbox.cli("history", "--json").stdout == "[]\n")
    }

    /// `rcagent history` at a faked wall-clock time (`FAKETIME`, read in the process's `TZ`).
    private func window(_ window: String, at time: String, zone: String) throws -> String {
        let sandbox = try Sandbox(extraConfig: "[Activation]\nWindow=\(window)\n")
        let result = try sandbox.run(
            "rcagent", ["history", "--config", sandbox.configPath],
            environment: FakedClock.environment(at: time, zone: zone))
        #expect(result.status == 0, "\(result.stderr)")
        return result.stdout.split(separator: "\n").last.map(String.init) ?? ""
    }

    /// A window, the faked time and zone of the process, and the window line `history` prints.
    static let windowLines: [(window: String, time: String, zone: String, line: String)] = [
        (
            "*-*-* 02:00-04:00 UTC", "2026-12-02 01:00:00", "UTC",
            "window: closed; the next opens at 2026-12-02T02:00:00Z (*-*-* 02:00-04:00 UTC)"
        ),
        ("*-*-* 02:00-04:00 UTC", "2026-12-02 03:00:00", "UTC", "window: open now (*-*-* 02:00-04:00 UTC)"),
        // 2026-03-29 00:30 UTC is 01:30 CET; at 01:00 UTC Berlin's clocks jump from 02:00 to 03:00.
        (
            "Sun 02:00-04:00 Europe/Berlin", "2026-03-29 00:30:00", "UTC",
            "window: closed; the next opens at 2026-03-29T01:00:00Z (Sun 02:00-04:00 Europe/Berlin)"
        ),
        // The night the clocks go back, 02:30 comes twice: from 02:50 CEST the next is 02:30 CET.
        (
            "Sun 02:30-02:45 Europe/Berlin", "2026-10-25 00:50:00", "UTC",
            "window: closed; the next opens at 2026-10-25T01:30:00Z (Sun 02:30-02:45 Europe/Berlin)"
        ),
        // A window without a zone is in the device's local time. TZ=Europe/Berlin: the faked 01:30
        // is CET, 00:30 UTC; the 02:00 local window opens at 01:00 UTC.
        (
            "*-*-* 02:00-04:00", "2026-12-02 01:30:00", "Europe/Berlin",
            "window: closed; the next opens at 2026-12-02T01:00:00Z (*-*-* 02:00-04:00)"
        ),
        (
            "*-*-* 02:00-04:00", "2026-12-02 01:30:00", "America/New_York",
            "window: closed; the next opens at 2026-12-02T07:00:00Z (*-*-* 02:00-04:00)"
        ),
    ]

    /// The window line follows the faked clock in a real process: the nights Berlin's clocks
    /// change, a zone named and the local one.
    @Test(arguments: 0..<windowLines.count)
    func theWindowLineFollowsTheFakedClock(_ index: Int) throws {
        let (window, time, zone, line) = Self.windowLines[index]
        #expect(try self.window(window, at: time, zone: zone) == line)
    }
}
