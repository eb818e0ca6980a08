import RCCore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Whether an instant is inside a maintenance window and when the next one opens, over the system's
/// zone database: the nights the clocks change in Berlin (2026-03-29 and 2026-10-25), windows that
/// span midnight, and a window whose start the clocks skip.
@Suite struct WindowScheduleTests {
    /// An instant from its UTC date and time.
    private func utc(_ year: Int, _ month: Int, _ day: Int, _ hour: Int, _ minute: Int) -> Timestamp {
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        return Timestamp(milliseconds: Int64(timegm(&parts)) * 1_000)
    }

    private func schedule(_ windows: String...) throws -> WindowSchedule {
        WindowSchedule(try windows.map { try MaintenanceWindow.parse($0) })
    }

    @Test func noWindowMeansAnyTime() {
        let any = WindowSchedule()
        #expect(any.isOpen(at: utc(2026, 12, 2, 12, 0)))
        #expect(any.nextOpening(after: utc(2026, 12, 2, 12, 0)) == utc(2026, 12, 2, 12, 0))
    }

    @Test func weekdayWindowsOpenOnTheirDaysOnly() throws {
        // 2026-12-02 is a Wednesday.
        let nights = try schedule("Mon..Fri 02:00-04:00 UTC")
        #expect(nights.isOpen(at: utc(2026, 12, 2, 2, 0)))
        #expect(nights.isOpen(at: utc(2026, 12, 2, 3, 59)))
        #expect(!nights.isOpen(at: utc(2026, 12, 2, 4, 0)))
        #expect(!nights.isOpen(at: utc(2026, 12, 5, 3, 0)))  // Saturday
        #expect(nights.nextOpening(after: utc(2026, 12, 2, 12, 0)) == utc(2026, 12, 3, 2, 0))
        // Friday afternoon: the next window is Monday's.
        #expect(nights.nextOpening(after: utc(2026, 12, 4, 12, 0)) == utc(2026, 12, 7, 2, 0))
    }

    @Test func aWindowThatSpansMidnightClosesTheNextMorning() throws {
        // Friday 22:00 to Saturday 06:00, Berlin (CET, UTC+1, in December).
        let friday = try schedule("Fri 22:00-06:00 Europe/Berlin")
        #expect(!friday.isOpen(at: utc(2026, 12, 4, 20, 59)))  // Fri 21:59
        #expect(friday.isOpen(at: utc(2026, 12, 4, 21, 0)))  // Fri 22:00
        #expect(friday.isOpen(at: utc(2026, 12, 5, 4, 59)))  // Sat 05:59
        #expect(!friday.isOpen(at: utc(2026, 12, 5, 5, 0)))  // Sat 06:00
        #expect(!friday.isOpen(at: utc(2026, 12, 6, 3, 0)))  // Sun 04:00: Saturday opens no window
        #expect(friday.nextOpening(after: utc(2026, 12, 5, 5, 0)) == utc(2026, 12, 11, 21, 0))
    }

    @Test func theSameWallTimeIsADifferentInstantInEachZone() throws {
        let berlin = try schedule("*-*-* 02:00-03:00 Europe/Berlin")
        let newYork = try schedule("*-*-* 02:00-03:00 America/New_York")
        #expect(berlin.isOpen(at: utc(2026, 12, 2, 1, 30)))
        #expect(!newYork.isOpen(at: utc(2026, 12, 2, 1, 30)))
        #expect(newYork.nextOpening(after: utc(2026, 12, 2, 1, 30)) == utc(2026, 12, 2, 7, 0))
        // In summer Berlin is UTC+2: the window moves an hour earlier in UTC.
        #expect(berlin.nextOpening(after: utc(2026, 7, 1, 12, 0)) == utc(2026, 7, 2, 0, 0))
    }

    @Test func aStartTheClocksSkipOpensWhenTheyLandAfterTheJump() throws {
        // 2026-03-29, Berlin: 02:00 CET becomes 03:00 CEST at 01:00 UTC.
        let sunday = try schedule("Sun 02:00-04:00 Europe/Berlin")
        #expect(!sunday.isOpen(at: utc(2026, 3, 29, 0, 59)))  // 01:59 CET
        #expect(sunday.isOpen(at: utc(2026, 3, 29, 1, 0)))  // 03:00 CEST
        #expect(sunday.nextOpening(after: utc(2026, 3, 28, 23, 0)) == utc(2026, 3, 29, 1, 0))
        #expect(!sunday.isOpen(at: utc(2026, 3, 29, 2, 0)))  // 04:00 CEST: the window was one hour long
    }

    @Test func aWindowInsideTheSkippedHourDoesNotOpenThatNight() throws {
        let skipped = try schedule("Sun 02:15-02:45 Europe/Berlin")
        // The next opening is a week later, 02:15 CEST = 00:15 UTC.
        #expect(skipped.nextOpening(after: utc(2026, 3, 28, 23, 0)) == utc(2026, 4, 5, 0, 15))
    }

    @Test func theRepeatedHourIsInsideTheWindowBothTimes() throws {
        // 2026-10-25, Berlin: 03:00 CEST becomes 02:00 CET at 01:00 UTC; 02:30 happens twice.
        let repeated = try schedule("Sun 02:30-02:45 Europe/Berlin")
        // From Sunday 00:00 CEST: the first reading, 02:30 CEST = 00:30 UTC.
        #expect(repeated.nextOpening(after: utc(2026, 10, 24, 22, 0)) == utc(2026, 10, 25, 0, 30))
        #expect(repeated.isOpen(at: utc(2026, 10, 25, 0, 40)))
        #expect(!repeated.isOpen(at: utc(2026, 10, 25, 0, 50)))  // 02:50 CEST
        // After the first reading closed: the second, 02:30 CET = 01:30 UTC.
        #expect(repeated.nextOpening(after: utc(2026, 10, 25, 0, 50)) == utc(2026, 10, 25, 1, 30))
        #expect(repeated.isOpen(at: utc(2026, 10, 25, 1, 35)))
    }

    @Test func theEarliestOfSeveralWindowsWins() throws {
        let two = try schedule("Sat,Sun 10:00-12:00 UTC", "Wed 23:00-01:00 UTC")
        #expect(two.nextOpening(after: utc(2026, 12, 2, 12, 0)) == utc(2026, 12, 2, 23, 0))
        #expect(two.isOpen(at: utc(2026, 12, 3, 0, 30)))  // Thursday 00:30, Wednesday's window
        #expect(two.nextOpening(after: utc(2026, 12, 3, 1, 0)) == utc(2026, 12, 5, 10, 0))
    }

    /// A clock stepped forward or back is just another instant: the answer depends on the instant
    /// alone (the daemon asks again when the clock is set).
    @Test func theAnswerDependsOnTheInstantAloneSoAClockStepIsAnotherQuestion() throws {
        let nights = try schedule("*-*-* 02:00-04:00 UTC")
        let before = utc(2026, 12, 2, 1, 0)
        let stepped = utc(2026, 12, 2, 3, 0)
        #expect(nights.nextOpening(after: before) == utc(2026, 12, 2, 2, 0))
        #expect(nights.nextOpening(after: stepped) == stepped)
        #expect(nights.nextOpening(after: before) == utc(2026, 12, 2, 2, 0))
    }
}
