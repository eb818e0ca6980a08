import RCCore
import Testing

/// Config-file durations: `ms s min h d`, a bare number is seconds, several parts add up.
@Suite struct DurationTextTests {
    @Test(arguments: [
        ("500ms", Duration.milliseconds(500)),
        ("30s", .seconds(30)),
        ("5min", .seconds(300)),
        ("12h", .seconds(43_200)),
        ("1d", .seconds(86_400)),
        ("2d", .seconds(172_800)),
        ("42", .seconds(42)),
        ("0", .zero),
        ("0ms", .zero),
        ("1h 30min", .seconds(5_400)),
        ("1h30min", .seconds(5_400)),
        ("1d 2h 3min 4s 5ms", .milliseconds(93_784_005)),
        ("1.5h", .seconds(5_400)),
        ("0.5s", .milliseconds(500)),
        ("2.25", .milliseconds(2_250)),
        ("  30s  ", .seconds(30)),
        ("\t12h", .seconds(43_200)),
    ])
    func parsesDurations(_ text: String, _ expected: Duration) {
        #expect(DurationText.parse(text) == expected)
    }

    @Test(arguments: [
        "", "   ", "abc", "5m", "5M", "5S", "5sec", "5 min", "1 h", "-1s", "+1s", ".5s", "5.s", "1..5s", "1.2.3s", "1x",
        "s", "ms", "1e3", "1h,30min", "１s", "1_000s", "99999999999d",
    ])
    func rejectsNonDurations(_ text: String) {
        #expect(DurationText.parse(text) == nil)
    }

    @Test(arguments: [
        (Duration.zero, "0"),
        (.milliseconds(1), "1ms"),
        (.milliseconds(500), "500ms"),
        (.milliseconds(1_500), "1500ms"),
        (.seconds(1), "1s"),
        (.seconds(30), "30s"),
        (.seconds(90), "90s"),
        (.seconds(300), "5min"),
        (.seconds(5_400), "90min"),
        (.seconds(3_600), "1h"),
        (.seconds(43_200), "12h"),
        (.seconds(86_400), "1d"),
        (.seconds(90_000), "25h"),
        (.seconds(172_800), "2d"),
    ])
    func formatsWithTheLargestExactUnit(_ duration: Duration, _ expected: String) {
        #expect(DurationText.format(duration) == expected)
    }

    @Test(arguments: [
        Duration.zero, .milliseconds(1), .milliseconds(999), .milliseconds(1_001), .seconds(59), .seconds(61),
        .seconds(3_599), .seconds(3_600), .seconds(86_399), .seconds(86_400), .seconds(7 * 86_400),
        .milliseconds(123_456_789),
    ])
    func formatRoundTripsThroughParse(_ duration: Duration) {
        #expect(DurationText.parse(DurationText.format(duration)) == duration)
    }

    @Test func millisecondsOfADuration() {
        #expect(Duration.seconds(2).milliseconds == 2_000)
        #expect(Duration.milliseconds(1_234).milliseconds == 1_234)
        #expect(Duration.microseconds(1_999).milliseconds == 1)
        #expect(Duration.milliseconds(-1_500).milliseconds == -1_500)
    }

    @Test func trimmingSpacesRemovesOnlyOuterWhiteSpace() {
        #expect(" \t a b \r\n".trimmingSpaces() == "a b")
        #expect("   ".trimmingSpaces() == "")
        #expect("x".trimmingSpaces() == "x")
    }
}
