/// Wall-clock instants as whole milliseconds since the Unix epoch: what the store keeps and
/// what status prints in ISO 8601 (UTC, `2026-11-29T13:34:45Z`).
public struct Timestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let milliseconds: Int64

    public init(milliseconds: Int64) { self.milliseconds = milliseconds }

    public static func < (a: Timestamp, b: Timestamp) -> Bool { a.milliseconds < b.milliseconds }

    public static func + (t: Timestamp, d: Duration) -> Timestamp {
        Timestamp(milliseconds: t.milliseconds + d.milliseconds)
    }

    /// `later - earlier` as a duration.
    public static func - (a: Timestamp, b: Timestamp) -> Duration { .milliseconds(a.milliseconds - b.milliseconds) }

    public var iso8601: String {
        let seconds = milliseconds.floorDivided(by: 1_000)
        let days = seconds.floorDivided(by: 86_400)
        let time = seconds - days * 86_400
        let date = CivilDate(days: days)
        func pad(_ n: Int64, _ width: Int = 2) -> String {
            let s = String(n)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        return "\(pad(date.year, 4))-\(pad(date.month))-\(pad(date.day))T"
            + "\(pad(time / 3_600)):\(pad(time / 60 % 60)):\(pad(time % 60))Z"
    }

    public var description: String { iso8601 }

    /// Reads `YYYY-MM-DDTHH:MM:SS[.fff](Z|±HH:MM)`, the ISO 8601 forms JSON documents use.
    public init?(iso8601 text: String) {
        let bytes = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int32? {
            guard range.upperBound <= bytes.count else { return nil }
            var value: Int32 = 0
            for b in bytes[range] {
                guard b >= 48 && b <= 57 else { return nil }
                value = value * 10 + Int32(b - 48)
            }
            return value
        }
        guard bytes.count >= 20, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            bytes[10] == UInt8(ascii: "T") || bytes[10] == UInt8(ascii: "t"), bytes[13] == UInt8(ascii: ":"),
            bytes[16] == UInt8(ascii: ":"),
            let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        // Day counting would roll an impossible date (February 30) into the next month: refuse it.
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let daysInMonth: [Int32] = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard day <= daysInMonth[Int(month) - 1] else { return nil }
        var index = 19
        var millis: Int64 = 0
        if bytes[index] == UInt8(ascii: ".") {
            index += 1
            var digits = 0
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                if digits < 3 { millis = millis * 10 + Int64(bytes[index] - 48) }
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<max(digits, 3) { millis *= 10 }
        }
        var offsetSeconds: Int64 = 0
        guard index < bytes.count else { return nil }
        if bytes[index] == UInt8(ascii: "Z") || bytes[index] == UInt8(ascii: "z") {
            index += 1
        } else if bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
            guard index + 6 == bytes.count, bytes[index + 3] == UInt8(ascii: ":"),
                let h = number((index + 1)..<(index + 3)), let m = number((index + 4)..<(index + 6)), h < 24, m < 60
            else { return nil }
            offsetSeconds = Int64(h) * 3_600 + Int64(m) * 60
            if bytes[index] == UInt8(ascii: "+") { offsetSeconds = -offsetSeconds }
            index += 6
        } else {
            return nil
        }
        guard index == bytes.count else { return nil }
        let days = CivilDate(year: Int64(year), month: Int64(month), day: Int64(day)).days
        // A leap second (:60) counts as the first second of the next minute, as timegm counts it.
        let seconds = days * 86_400 + Int64(hour) * 3_600 + Int64(minute) * 60 + Int64(second) + offsetSeconds
        self.init(milliseconds: seconds * 1_000 + millis)
    }
}

/// A date of the proleptic Gregorian calendar and its day number since 1970-01-01, converted both
/// ways by Howard Hinnant's `days_from_civil` and `civil_from_days` (exact for every Int64 day
/// here; no calendar tables, no libc).
struct CivilDate {
    var year: Int64
    /// 1...12
    var month: Int64
    /// 1...31
    var day: Int64

    init(year: Int64, month: Int64, day: Int64) {
        self.year = year
        self.month = month
        self.day = day
    }

    /// The date `days` days after 1970-01-01 (before it when negative).
    init(days: Int64) {
        let z = days + 719_468
        let era = z.floorDivided(by: 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153  // 0 is March
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        self.init(
            year: yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month: month,
            day: dayOfYear - (153 * shiftedMonth + 2) / 5 + 1)
    }

    /// Days since 1970-01-01.
    var days: Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = y.floorDivided(by: 400)
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}

extension Int64 {
    package func floorDivided(by d: Int64) -> Int64 {
        let q = self / d
        return (self % d != 0 && (self < 0) != (d < 0)) ? q - 1 : q
    }
}
