import Glibc
import RCCore
import RCSystem
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

    /// RCCore counts days itself (no libc): every instant it formats, from 1462 to 2477 at a time of
    /// day that moves, reads as glibc's gmtime_r has it, and parses back to the same second.
    @Test func calendarAgreesWithLibc() {
        func pad(_ n: Int32, _ width: Int = 2) -> String {
            let s = String(n)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        var mismatches: [String] = []
        var seconds: Int64 = -16_000_000_000
        while seconds < 16_000_000_000 {
            var time = time_t(seconds)
            var parts = tm()
            gmtime_r(&time, &parts)
            let expected =
                "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1))-\(pad(parts.tm_mday))T"
                + "\(pad(parts.tm_hour)):\(pad(parts.tm_min)):\(pad(parts.tm_sec))Z"
            let timestamp = Timestamp(milliseconds: seconds * 1_000)
            if timestamp.iso8601 != expected || Timestamp(iso8601: expected) != timestamp {
                mismatches.append("\(seconds): \(timestamp.iso8601), libc \(expected)")
            }
            seconds += 86_400 * 37 + 3_607
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(5))")
    }

    @Test func nowIsTheWallClock() {
        let now = Timestamp.now()
        // 2024-01-01 and 2100-01-01: the clock is set, and these are milliseconds, not seconds.
        #expect(now > Timestamp(milliseconds: 1_704_067_200_000))
        #expect(now < Timestamp(milliseconds: 4_102_444_800_000))
    }
}
