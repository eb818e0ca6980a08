import RCCore
import Testing

/// Millisecond timestamps and their ISO 8601 text (UTC, whole seconds).
@Suite struct TimestampTests {
    @Test(arguments: [
        (Int64(0), "1970-01-01T00:00:00Z"),
        (999, "1970-01-01T00:00:00Z"),
        (1_000, "1970-01-01T00:00:01Z"),
        (1_700_000_000_123, "2023-11-14T22:13:20Z"),
        (951_782_400_000, "2000-02-29T00:00:00Z"),
        (4_102_444_799_999, "2099-12-31T23:59:59Z"),
        (-1, "1969-12-31T23:59:59Z"),
        (-999, "1969-12-31T23:59:59Z"),
        (-1_000, "1969-12-31T23:59:59Z"),
        (-1_001, "1969-12-31T23:59:58Z"),
        (-86_400_000, "1969-12-31T00:00:00Z"),
        (-14_182_940_000, "1969-07-20T20:17:40Z"),
        (-2_208_988_800_000, "1900-01-01T00:00:00Z"),
    ])
    func iso8601(_ milliseconds: Int64, _ expected: String) {
        let timestamp = Timestamp(milliseconds: milliseconds)
        #expect(timestamp.iso8601 == expected)
        #expect(timestamp.description == expected)
    }

    @Test func arithmeticAndOrder() {
        let t = Timestamp(milliseconds: 1_000)
        #expect(t + .seconds(2) == Timestamp(milliseconds: 3_000))
        #expect(t + .milliseconds(-1_500) == Timestamp(milliseconds: -500))
        #expect(Timestamp(milliseconds: 5_250) - t == .milliseconds(4_250))
        #expect(t - Timestamp(milliseconds: 1_500) == .milliseconds(-500))
        #expect(t < Timestamp(milliseconds: 1_001))
        #expect(!(t < t))
        #expect(
            [Timestamp(milliseconds: 3), Timestamp(milliseconds: -1), Timestamp(milliseconds: 2)].sorted().map(
                \.milliseconds)
                == [-1, 2, 3])
    }

    @Test func nowIsTheWallClock() {
        let now = Timestamp.now()
        // 2024-01-01 and 2100-01-01: the clock is set, and these are milliseconds, not seconds.
        #expect(now > Timestamp(milliseconds: 1_704_067_200_000))
        #expect(now < Timestamp(milliseconds: 4_102_444_800_000))
    }
}
