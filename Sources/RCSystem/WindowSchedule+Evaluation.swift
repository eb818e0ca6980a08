import RCCore

/// When windows are open: wall-clock arithmetic over the C library's zone rules (``LocalTime``); the
/// daemon asks again when the answer's time comes, or when the clock is stepped.
extension WindowSchedule {
    /// Whether `instant` is inside a window (always, without windows).
    public func isOpen(at instant: Timestamp) -> Bool {
        windows.isEmpty || windows.contains { Self.isOpen($0, at: instant) }
    }

    /// The first instant at or after `instant` inside a window: `instant` itself when it is inside
    /// one; `nil` only when no window ever opens (every one falls in clock changes).
    public func nextOpening(after instant: Timestamp) -> Timestamp? {
        if isOpen(at: instant) { return instant }
        return windows.compactMap { Self.nextOpening(of: $0, after: instant) }.min()
    }

    static func isOpen(_ window: MaintenanceWindow, at instant: Timestamp) -> Bool {
        let local = LocalTime.parts(of: instant, zone: window.zone)
        let second = local.secondOfDay
        func on(_ weekday: Int) -> Bool { window.weekdays & (1 << ((weekday + 7) % 7)) != 0 }
        if window.spansMidnight {
            return (on(local.weekday) && second >= window.start * 60)
                || (on(local.weekday - 1) && second < window.end * 60)
        }
        return on(local.weekday) && second >= window.start * 60 && second < window.end * 60
    }

    /// The first opening of `window` after `instant`, which is outside it: for each of the next eight
    /// days the window opens on, the instant its start time comes on the wall clock there.
    static func nextOpening(of window: MaintenanceWindow, after instant: Timestamp) -> Timestamp? {
        let today = LocalTime.parts(of: instant, zone: window.zone)
        for offset in 0...8 where window.weekdays & (1 << ((today.weekday + offset) % 7)) != 0 {
            if let opening = opening(
                of: window, year: today.year, month: today.month, day: today.day + offset, notBefore: instant),
                isOpen(window, at: opening)
            {
                return opening
            }
        }
        return nil
    }

    /// The first instant not before `notBefore` at which the wall clock reads the window's start on
    /// that date. Both readings of a repeated hour are tried (the earliest one not past wins); a start
    /// inside a skipped hour opens when the clock lands after the jump, found by bisection (the wall
    /// clock runs forward on either side of it).
    private static func opening(of window: MaintenanceWindow, year: Int, month: Int, day: Int, notBefore: Timestamp)
        -> Timestamp?
    {
        let target = LocalTime.instant(year: year, month: month, day: day, minute: 0, zone: window.zone)
        let date = LocalTime.parts(of: target + .seconds(12 * 3600), zone: window.zone)
        func reads(_ instant: Timestamp) -> Bool {
            let local = LocalTime.parts(of: instant, zone: window.zone)
            return (local.year, local.month, local.day) == (date.year, date.month, date.day)
                && local.secondOfDay == window.start * 60
        }
        let guess = LocalTime.instant(
            year: date.year, month: date.month, day: date.day, minute: window.start, zone: window.zone)
        // The same wall time an hour either side of mktime's pick: the other reading of a repeated hour.
        let readings = [guess - .seconds(3600), guess, guess + .seconds(3600)].filter(reads)
        if !readings.isEmpty { return readings.filter { $0 >= notBefore }.min() }
        // A skipped start: the first instant whose wall time that day is at or past the start.
        func reached(_ instant: Timestamp) -> Bool {
            let local = LocalTime.parts(of: instant, zone: window.zone)
            let day = (local.year, local.month, local.day)
            let target = (date.year, date.month, date.day)
            return day > target || (day == target && local.secondOfDay >= window.start * 60)
        }
        var low = guess - .seconds(3 * 3600)
        var high = guess + .seconds(3 * 3600)
        guard !reached(low), reached(high) else { return nil }
        while high.milliseconds - low.milliseconds > 1_000 {
            let middle = Timestamp(
                milliseconds: low.milliseconds + (high.milliseconds - low.milliseconds) / 2000 * 1000)
            if reached(middle) { high = middle } else { low = middle }
        }
        return high >= notBefore ? high : nil
    }
}

extension Timestamp {
    static func - (t: Timestamp, d: Duration) -> Timestamp { Timestamp(milliseconds: t.milliseconds - d.milliseconds) }
}
