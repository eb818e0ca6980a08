import Foundation
import RCCore
import TestSupport
import Testing

@testable import RCAdmin

/// Device ids, topics and values that only look alike (U+212A KELVIN SIGN for `K`, a level that
/// starts with a combining mark, one text in two Unicode normalization forms) are different, as the
/// broker, the server and the device see them: `fleet status` and `set-update` compare bytes.
@Suite struct LookAlikeTests {
    static let t0 = Timestamp(iso8601: "2026-11-30T12:00:00Z")!

    static func bytes(_ report: DeviceReport) -> [UInt8] { Array(report.json.compactText.utf8) }

    @Test func aLookAlikeTopicIsAnotherDeviceNotAStandIn() {
        var inbox = FleetInbox(base: "s")
        let real = "dK3"
        let fake = "d\u{212A}3"
        inbox.receive(topic: "s/\(real)", payload: Self.bytes(.sample(real, "9", at: Self.t0)))
        // A report claiming the real id on the look-alike topic: not the topic's level, by bytes.
        inbox.receive(topic: "s/\(fake)", payload: Self.bytes(.sample(real, "43", at: Self.t0)))
        // The look-alike device's own report: a device of its own.
        inbox.receive(topic: "s/\(fake)x", payload: Self.bytes(.sample(fake + "x", "43", at: Self.t0)))
        inbox.receive(topic: "s/dK3x", payload: Self.bytes(.sample("dK3x", "43", at: Self.t0)))
        let summary = inbox.summary
        #expect(summary.devices == 3, "\(summary.reports.map(\.deviceId))")
        let real9 = summary.reports.first { $0.deviceId.sameBytes(as: real) }
        #expect(real9?.templateVersion == "9", "the real device's report stays")
        #expect(summary.lagging.contains { $0.sameBytes(as: real) })
        #expect(summary.unreadable.count == 1)
        #expect(summary.unreadable.first?.reason.contains("is not the topic's last level") == true)
        let text = FleetStatusOutput.text(summary, topic: "s", limit: nil)
        #expect(text.contains("Lagging behind v43: 1"), "\(text)")
    }

    @Test func aLevelStartingWithACombiningMarkIsCountedAndListed() {
        var inbox = FleetInbox(base: "s")
        let id = "\u{301}mark"
        inbox.receive(topic: "s/\(id)", payload: Self.bytes(.sample(id, "1", at: Self.t0)))
        inbox.receive(topic: "s/\u{301}", payload: Array("not json".utf8))
        inbox.receive(topic: "s/\u{301}/x", payload: Self.bytes(.sample("x", "1", at: Self.t0)))
        let summary = inbox.summary
        #expect(summary.devices == 1 && summary.reports.first?.deviceId.sameBytes(as: id) == true)
        #expect(summary.unreadable.count == 2, "\(summary.unreadable)")
        #expect(summary.unreadable.contains { $0.reason.contains("more than one level") })
        // Its marker-like look-alike is a device's topic too, not another run's marker.
        var markers = FleetInbox(base: "s")
        let taken = markers.receive(topic: "s/\u{301}\(FleetInbox.markerPrefix)1", payload: Array("x".utf8))
        #expect(taken && markers.count == 1)
    }

    @Test func anEquivalentStoredValueIsAChange() throws {
        let offer = try UpdateKeyEdit(
            kind: .required, platform: .linux, version: "1.4.0", download: "https://dl.example.com/rcagent_1.4.0.deb",
            deadline: nil, message: "caf\u{E9}")
        let first = try offer.apply(to: try JSONValue.parse("{}"))
        // The stored value: the same text with the é decomposed (e + U+0301), other bytes.
        let stored = first.template.compactText.replacingOccurrences(of: "caf\u{E9}", with: "cafe\u{301}")
        #expect(!stored.sameBytes(as: first.template.compactText), "the template now holds other bytes")
        let again = try offer.apply(to: try JSONValue.parse(stored))
        #expect(again.outcome == .updated, "\(again.summary)")
        #expect(again.template.compactText.sameBytes(as: first.template.compactText))
    }
}
