/// One `[Activation] Window=`: the weekdays and the time of day (a range that may span midnight)
/// during which a fetched snapshot may become active, in local time or in a named zone.
///
/// The syntax is systemd-calendar-like: `[WEEKDAYS] [*-*-*] HH:MM-HH:MM [ZONE]`, e.g.
/// `Mon..Fri 02:00-04:00`, `Sat,Sun 00:00-24:00`, `*-*-* 22:00-06:00 Europe/Berlin`. Weekdays are
/// English names or their three-letter forms, any case, as a comma list of days and `A..B` ranges
/// (a range may wrap: `Sat..Mon`); no weekdays means every day. A range whose end is before its
/// start spans midnight: it opens on the listed days and closes the next morning. Times are wall-clock
/// times: on the night the clocks go forward a window inside the skipped hour opens when it ends, and
/// on the night they go back the repeated hour is inside the window both times.
public struct MaintenanceWindow: Sendable, Hashable, CustomStringConvertible {
    /// Bit `d` set: the window opens on weekday `d` (0 = Sunday, as `tm_wday`).
    public let weekdays: UInt8
    /// Minutes after local midnight, `0..<1440`.
    public let start: Int
    /// Minutes after local midnight, `1...1440`; before `start`: the window ends the next day.
    public let end: Int
    /// An IANA zone name (`Europe/Berlin`), or `nil` for the system's local time.
    public let zone: String?
    /// The text it was parsed from, for messages.
    public let text: String

    public var description: String { text }

    /// Whether the window spans midnight (closes on the day after it opens).
    public var spansMidnight: Bool { end < start }

    /// The longest value taken: a window is a short line; anything longer is a mistake.
    public static let maximumLength = 200

    /// Parses `text`; the error says what is wrong, in words fit for a config error.
    public static func parse(_ text: String) throws(WindowSyntaxError) -> MaintenanceWindow {
        guard text.utf8.count <= maximumLength else {
            throw WindowSyntaxError("is \(text.utf8.count) bytes long; at most \(maximumLength) are taken")
        }
        var words = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard !words.isEmpty else { throw WindowSyntaxError("is empty") }
        // The time range is the one word with a '-' between two times; what precedes it is the
        // weekdays and the optional `*-*-*`, what follows it the zone.
        guard let timeIndex = words.firstIndex(where: { Self.timeRange($0) != nil }),
            let (start, written) = Self.timeRange(words[timeIndex])
        else {
            throw WindowSyntaxError("needs a time range HH:MM-HH:MM (e.g. 02:00-04:00)")
        }
        // `-00:00` is midnight at the end of the day, as `-24:00`.
        let end = written == 0 ? 1440 : written
        guard start != end else {
            throw WindowSyntaxError("'\(words[timeIndex])' is an empty range")
        }
        let after = Array(words[(timeIndex + 1)...])
        words = Array(words[..<timeIndex])
        if words.last == "*-*-*" { words.removeLast() }
        guard words.count <= 1 else {
            throw WindowSyntaxError(
                "'\(words.joined(separator: " "))' is not a weekday list (e.g. Mon..Fri or Sat,Sun); "
                    + "dates other than *-*-* are not supported")
        }
        let weekdays = try words.first.map(Self.weekdayList) ?? 0x7f
        guard after.count <= 1 else {
            throw WindowSyntaxError("has '\(after.joined(separator: " "))' after the zone name")
        }
        var zone: String?
        if let name = after.first {
            guard TimeZoneName.isWellFormed(name) else {
                throw WindowSyntaxError("'\(name)' is not a time zone name (e.g. Europe/Berlin)")
            }
            zone = name
        }
        return MaintenanceWindow(
            weekdays: weekdays, start: start, end: end, zone: zone, text: text)
    }

    init(weekdays: UInt8, start: Int, end: Int, zone: String?, text: String) {
        self.weekdays = weekdays
        self.start = start
        self.end = end
        self.zone = zone
        self.text = text
    }

    /// `HH:MM-HH:MM` as minutes (end up to 24:00), or `nil`.
    static func timeRange(_ word: String) -> (Int, Int)? {
        let parts = word.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let start = clockTime(parts[0]), let end = clockTime(parts[1]), start < 1440 else {
            return nil
        }
        return (start, end)
    }

    /// `HH:MM` (`H:MM` too) as minutes after midnight, `24:00` included.
    private static func clockTime(_ text: Substring) -> Int? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, (1...2).contains(parts[0].utf8.count), parts[1].utf8.count == 2,
            parts.allSatisfy({ $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }),
            let hour = Int(parts[0]), let minute = Int(parts[1]), minute < 60
        else { return nil }
        let minutes = hour * 60 + minute
        return minutes <= 1440 ? minutes : nil
    }

    private static let dayNames = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"]

    private static func weekday(_ name: Substring) throws(WindowSyntaxError) -> Int {
        let lower = name.lowercased()
        if let day = dayNames.firstIndex(where: { $0 == lower || ($0.prefix(3) == lower && lower.count == 3) }) {
            return day
        }
        throw WindowSyntaxError("'\(name)' is not a weekday (Mon, Tue, Wed, Thu, Fri, Sat, Sun)")
    }

    /// `Mon..Fri`, `Sat,Sun`, `Mon,Wed..Fri` as a weekday bit set.
    private static func weekdayList(_ text: String) throws(WindowSyntaxError) -> UInt8 {
        var bits: UInt8 = 0
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard !item.isEmpty else { throw WindowSyntaxError("'\(text)' has an empty weekday") }
            if let dots = item.firstRange(of: "..") {
                var day = try weekday(item[..<dots.lowerBound])
                let last = try weekday(item[dots.upperBound...])
                while true {
                    bits |= 1 << day
                    if day == last { break }
                    day = (day + 1) % 7
                }
            } else {
                bits |= 1 << (try weekday(item))
            }
        }
        return bits
    }
}

/// Why a `Window=` value does not parse (the config error adds the file and line).
public struct WindowSyntaxError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
