/// Durations as the config file writes them: `500ms`, `30s`, `5min`, `12h`, `2d`, or several
/// such parts (`1h 30min`); a bare number is seconds. Fractions are allowed (`1.5h`).
public enum DurationText {
    private static let units: [(suffix: String, milliseconds: Double)] = [
        ("ms", 1), ("s", 1_000), ("min", 60_000), ("h", 3_600_000), ("d", 86_400_000),
    ]

    /// Parses `text` into a duration, or returns `nil` when it is not one.
    public static func parse(_ text: String) -> Duration? {
        var total = 0.0
        var rest = Substring(text.trimmingSpaces())
        guard !rest.isEmpty else { return nil }
        while !rest.isEmpty {
            let number = rest.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
            guard !number.isEmpty, number.first != ".", number.last != ".", let value = Double(number) else {
                return nil
            }
            rest = rest.dropFirst(number.count)
            let unitText = rest.prefix { $0.isASCII && $0.isLetter }
            rest = rest.dropFirst(unitText.count)
            let scale: Double
            if unitText.isEmpty {
                scale = 1_000
            } else if let unit = units.first(where: { $0.suffix == unitText }) {
                scale = unit.milliseconds
            } else {
                return nil
            }
            total += value * scale
            rest = rest.drop { $0 == " " }
        }
        guard total.isFinite, total < 1e15 else { return nil }
        return .milliseconds(Int64(total.rounded()))
    }

    /// The shortest text with a single unit that `parse` reads back as `duration`.
    public static func format(_ duration: Duration) -> String {
        let ms = duration.milliseconds
        for unit in units.reversed() where ms != 0 && ms % Int64(unit.milliseconds) == 0 {
            return "\(ms / Int64(unit.milliseconds))\(unit.suffix)"
        }
        return ms == 0 ? "0" : "\(ms)ms"
    }
}

/// Byte sizes as the config file writes them: a bare number of bytes, or `K`, `M`, `G` (powers of 1024).
public enum SizeText {
    public static func parse(_ text: String) -> Int? {
        let trimmed = text.trimmingSpaces()
        // Keyed by String: some characters upper-case to several ("ß" to "SS"), which no Character holds.
        let multipliers: [String: Int] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30]
        let (digits, multiplier) =
            if let last = trimmed.last, let m = multipliers[last.uppercased()] {
                (trimmed.dropLast(), m)
            } else {
                (trimmed, 1)
            }
        guard let value = Int(digits), value > 0 else { return nil }
        let (product, overflow) = value.multipliedReportingOverflow(by: multiplier)
        return overflow ? nil : product
    }
}

extension Duration {
    /// Whole milliseconds, rounded toward zero.
    public var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000 + attoseconds / 1_000_000_000_000_000
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs (config values, socket fields).
    public func trimmingSpaces() -> Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\n" || $0 == "\r\n" }
        let s = Substring(self)
        guard let start = s.firstIndex(where: { !isSpace($0) }) else { return s[s.endIndex...] }
        let end = s.lastIndex(where: { !isSpace($0) })!
        return Substring(s[start...end])
    }
}
