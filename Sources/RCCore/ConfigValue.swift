/// Where a value came from: the active remote snapshot, the defaults file, or the caller's `--default`.
public enum ValueSource: String, Sendable {
    case remote, `default`, flag
}

/// The types `rcagent get --type` reads a value as.
public enum ValueType: String, Sendable, CaseIterable {
    case string, bool, number, int, json
}

/// A value cannot be read as the requested type (exit 65 in the CLI).
public struct ValueConversionError: Error, CustomStringConvertible, Sendable, Equatable {
    public let key: String
    public let type: ValueType
    public let value: String

    public var description: String {
        let shown = value.count > 80 ? String(value.prefix(77)) + "..." : value
        return "value of '\(key)' is not a valid \(type.rawValue): \"\(shown)\""
    }
}

/// One resolved value. Values are stored as strings, as Remote Config does; conversion happens on read.
public struct ConfigValue: Sendable, Equatable {
    public let key: String
    public let text: String
    public let source: ValueSource

    public init(key: String, text: String, source: ValueSource) {
        self.key = key
        self.text = text
        self.source = source
    }

    /// Booleans as Firebase's Android and JS SDKs read them: trimmed, case-insensitive.
    static let trueWords: Set<String> = ["1", "true", "t", "yes", "y", "on"]
    static let falseWords: Set<String> = ["0", "false", "f", "no", "n", "off", ""]

    public var boolValue: Bool? {
        let word = String(text.trimmingSpaces()).lowercased()
        if Self.trueWords.contains(word) { return true }
        if Self.falseWords.contains(word) { return false }
        return nil
    }

    /// A decimal number: optional sign, digits with an optional fraction, optional exponent.
    /// Hex, `inf`, `nan` and empty text are not numbers.
    public var numberValue: Double? {
        let trimmed = text.trimmingSpaces()
        guard Self.isDecimalNumber(trimmed.utf8), let value = Double(trimmed), value.isFinite else { return nil }
        return value
    }

    /// An integer: a number with no fractional part that fits in 64 bits. Integer text is read
    /// exactly (no detour through a double), so large identifiers keep every digit.
    public var intValue: Int64? {
        let trimmed = text.trimmingSpaces()
        if let exact = Int64(trimmed) { return exact }
        // Integer text that Int64 refused has overflowed: it must not be rounded through a double.
        let digits = trimmed.drop { $0 == "+" || $0 == "-" }
        if !digits.isEmpty && digits.allSatisfy(\.isASCIIDigit) { return nil }
        guard let number = numberValue, number == number.rounded(),
            number >= -9_223_372_036_854_775_808, number < 9_223_372_036_854_775_808
        else { return nil }
        return Int64(number)
    }

    /// The text printed for `--type`: the canonical form of the converted value.
    public func rendered(as type: ValueType) throws(ValueConversionError) -> String {
        let failure = ValueConversionError(key: key, type: type, value: text)
        switch type {
        case .string:
            return text
        case .bool:
            guard let b = boolValue else { throw failure }
            return b ? "true" : "false"
        case .int:
            guard let i = intValue else { throw failure }
            return String(i)
        case .number:
            if let i = Int64(text.trimmingSpaces()) { return String(i) }
            guard let d = numberValue else { throw failure }
            return JSONValue.format(d)
        case .json:
            guard let json = try? JSONValue.parse(text) else { throw failure }
            return json.compactText
        }
    }

    private static func isDecimalNumber(_ bytes: Substring.UTF8View) -> Bool {
        var i = bytes.startIndex
        func digits() -> Int {
            var count = 0
            while i < bytes.endIndex, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[i]) {
                count += 1
                i = bytes.index(after: i)
            }
            return count
        }
        if i < bytes.endIndex, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") {
            i = bytes.index(after: i)
        }
        var mantissa = digits()
        if i < bytes.endIndex, bytes[i] == UInt8(ascii: ".") {
            i = bytes.index(after: i)
            mantissa += digits()
        }
        guard mantissa > 0 else { return false }
        if i < bytes.endIndex, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            i = bytes.index(after: i)
            if i < bytes.endIndex, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") {
                i = bytes.index(after: i)
            }
            guard digits() > 0 else { return false }
        }
        return i == bytes.endIndex
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isWholeNumber }
}
