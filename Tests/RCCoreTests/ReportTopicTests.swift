import RCCore
import Testing

/// ``ReportTopic``: what may be a report topic prefix, and the topic a device publishes on.
@Suite struct ReportTopicTests {
    @Test(arguments: ["rcagent/status", "fleet", "a/b/c", "site 12/kiosks", String(repeating: "t", count: 512)])
    func plainTopicNamesAreTaken(_ prefix: String) {
        #expect(ReportTopic.problem(prefix) == nil)
    }

    @Test(arguments: [
        ("a/+/b", "must not hold the wildcards + or #"), ("#", "must not hold the wildcards + or #"),
        ("a\u{0}b", "must not hold a NUL"), ("$SYS", "must not start with $ (the broker's own topics)"),
        ("a/", "must not end with /"), (String(repeating: "é", count: 257), "is longer than 512 bytes"),
    ])
    func badPrefixesAreRefusedSayingWhy(_ prefix: String, _ problem: String) {
        #expect(ReportTopic.problem(prefix) == problem)
    }

    @Test func theDeviceIdIsTheLastLevel() {
        #expect(ReportTopic.topic("rcagent/status", deviceId: "dnd24") == "rcagent/status/dnd24")
    }
}
