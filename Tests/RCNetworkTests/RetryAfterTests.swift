import RCCore
import RCHTTP
import Testing

/// RCHTTP's `Retry-After` reader: the cases the retry-after fuzz target found, and the two forms.
@Suite struct RetryAfterTests {
    let now = Timestamp(milliseconds: 1_800_000_000_000)

    @Test func isCappedAndYearsOutOfRangeDoNotTrap() {
        // `year - 1900` and the seconds-to-milliseconds product overflowed and trapped.
        #expect(RetryAfter.parse("Sun, 06 Nov -2147483648 08:49:37 GMT", now: now) == nil)
        #expect(RetryAfter.parse("Sun, 06 Nov 2147483647 08:49:37 GMT", now: now) == nil)
        #expect(RetryAfter.parse("Sun, 06 Nov 9999 08:49:37 GMT", now: now) == RetryAfter.maximum)
        #expect(RetryAfter.parse("9223372036854775807", now: now) == RetryAfter.maximum)
        #expect(RetryAfter.parse("120", now: now) == .seconds(120))
        #expect(RetryAfter.parse("Sun, 06 Nov 1994 08:49:37 GMT", now: now) == .zero)
        #expect(RetryAfter.parse("Sun, 06 Nov 1994 25:49:37 GMT", now: now) == nil)
    }

    /// Both forms are ASCII; anything else is refused by its bytes before any String work (trimming and
    /// splitting compare graphemes: a value of combining marks cost the square of its length).
    @Test func aValueThatIsNotASCIIIsRefusedByItsBytes() {
        #expect(RetryAfter.parse("Fr\u{ED}, 15 Jan 2027 08:01:30 GMT", now: now) == nil, "the day name went unchecked")
        #expect(RetryAfter.parse(String(repeating: "\u{0301}\u{0316}", count: 20_000), now: now) == nil)
        #expect(RetryAfter.parse("Fri, 15 Jan 2027 08:01:30 GMT", now: now) == .seconds(90))
    }

    @Test func aDateAheadIsTheTimeUntilIt() {
        // 1_800_000_000 s is Fri, 15 Jan 2027 08:00:00 GMT.
        #expect(RetryAfter.parse("Fri, 15 Jan 2027 08:01:30 GMT", now: now) == .seconds(90))
        #expect(RetryAfter.parse(" 30 ", now: now) == .seconds(30))
        #expect(RetryAfter.parse("-1", now: now) == nil)
        #expect(RetryAfter.parse("soon", now: now) == nil)
    }
}
