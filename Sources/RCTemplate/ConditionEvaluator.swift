internal import CCrypto
internal import CLazyLibraries

/// Evaluates condition trees for one device with the Firebase Admin SDK's semantics
/// (firebase-admin-node `src/remote-config/condition-evaluator-internal.ts`, the SHA-256 version).
///
/// Every failure mode is `false`, never an error: too deep, unknown kinds and operators, a missing
/// device id or signal, values that are not numbers or versions, a regular expression that does not compile.
struct ConditionEvaluator {
    /// Nodes deeper than this evaluate to false; the top-level node is at depth 1.
    ///
    /// The Admin SDK checks `nestingLevel >= 10` but raises the level twice per `or`/`and` (once
    /// entering the combinator, once per child), which in effect stops at 5 nested nodes. The documented limit
    /// promises "deeper than 10 is false"; this counts each node once. Only templates nested 6 to 10
    /// deep can tell the two apart.
    static let maxDepth = 10

    let context: EvaluationContext

    func evaluate(_ condition: TemplateCondition) -> Bool {
        evaluate(condition, depth: 1)
    }

    private func evaluate(_ condition: TemplateCondition, depth: Int) -> Bool {
        guard depth <= Self.maxDepth else { return false }
        switch condition {
        // `contains` and `allSatisfy` stop at the first deciding child, as the SDK's loops do.
        case let .or(children): return children.contains { evaluate($0, depth: depth + 1) }
        case let .and(children): return children.allSatisfy { evaluate($0, depth: depth + 1) }
        case .true: return true
        case .false: return false
        case let .percent(percent): return evaluate(percent)
        case let .customSignal(signal): return evaluate(signal)
        case .unknown: return false
        }
    }

    // MARK: - Percent

    private func evaluate(_ percent: PercentCondition) -> Bool {
        // Not `.map(Double.init)`: that unapplied reference resolves to `init(bitPattern:)`.
        guard !context.deviceId.isEmpty,
            let x = Self.microPercentile(seed: percent.seed, deviceId: context.deviceId).map({ Double($0) })
        else { return false }
        switch percent.percentOperator {
        case .lessOrEqual: return x <= percent.microPercent
        case .greaterThan: return x > percent.microPercent
        case .between: return percent.microPercentLowerBound < x && x <= percent.microPercentUpperBound
        case .unspecified, .unrecognized: return false
        }
    }

    /// The device's bucket in micro-percent, 0 ..< 100,000,000: SHA-256 of `"<seed>.<deviceId>"` (the
    /// device id alone without a seed) read as a big-endian 256-bit integer, modulo 10^8.
    /// `nil` only if libcrypto fails.
    static func microPercentile(seed: String, deviceId: String) -> UInt64? {
        let input = seed.isEmpty ? deviceId : seed + "." + deviceId
        guard let digest = sha256(Array(input.utf8)) else { return nil }
        // Horner's rule over the bytes, reducing as it goes: the remainder stays below 10^8, so
        // remainder · 256 + byte fits easily in 64 bits and no bignum is needed.
        var remainder: UInt64 = 0
        for byte in digest {
            remainder = (remainder * 256 + UInt64(byte)) % 100_000_000
        }
        return remainder
    }

    /// `nil` also without libcrypto (loaded on first use; the package depends on it).
    private static func sha256(_ bytes: [UInt8]) -> [UInt8]? {
        guard rc_lazy_require(RC_LAZY_CRYPTO) == nil else { return nil }
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let status = bytes.withUnsafeBytes { input in
            digest.withUnsafeMutableBufferPointer { output in
                EVP_Digest(input.baseAddress, input.count, output.baseAddress, &length, EVP_sha256(), nil)
            }
        }
        return status == 1 && length == 32 ? digest : nil
    }

    // MARK: - Custom signals

    private func evaluate(_ signal: CustomSignalCondition) -> Bool {
        let targets = signal.targetCustomSignalValues
        guard !signal.customSignalKey.isEmpty, let first = targets.first,
            let actual = context.signals[signal.customSignalKey]
        else { return false }
        switch signal.customSignalOperator {
        case .stringContains:
            return targets.contains { Self.contains(actual, $0) }
        case .stringDoesNotContain:
            // True only when no target is contained (the SDK negates "any target is contained").
            return !targets.contains { Self.contains(actual, $0) }
        case .stringExactlyMatches:
            let trimmed = JavaScript.trimmed(actual)
            return targets.contains { JavaScript.trimmed($0).utf8.elementsEqual(trimmed.utf8) }
        case .stringContainsRegex:
            return targets.contains { Self.matches(actual, pattern: $0) }
        case let .numeric(comparison):
            // Only the first target counts for numeric and version operators.
            guard let a = JavaScript.number(actual), let b = JavaScript.number(first) else { return false }
            return comparison.holds(a < b ? -1 : a > b ? 1 : 0)
        case let .semanticVersion(comparison):
            guard let order = Self.compareVersions(actual, first) else { return false }
            return comparison.holds(order)
        case .unspecified, .unrecognized:
            return false
        }
    }

    /// Substring search on code units, like JavaScript's `includes` (Swift's `String.contains`
    /// would compare grapheme clusters, so "é" written as e + U+0301 would not contain "e").
    /// Every string contains the empty string.
    private static func contains(_ actual: String, _ target: String) -> Bool {
        actual.utf8.firstRange(of: target.utf8) != nil
    }

    /// Whether `pattern` matches anywhere in `actual`. A pattern that does not compile matches nothing
    /// (the SDK would throw out of the whole evaluation), and so does one whose match needs more work
    /// than ``BoundedRegex``'s limits: a template cannot make the evaluation take exponential time.
    private static func matches(_ actual: String, pattern: String) -> Bool {
        guard let regex = BoundedRegex(pattern) else { return false }
        return (try? regex.matches(actual)) ?? false
    }

    /// Compares dot-separated versions segment by segment, missing segments being 0 (1.2.3 == 1.2.3.0).
    /// `nil` (the condition is false) when either side has more than 5 segments or any segment is
    /// not a number, or is negative. The SDK only notices a non-number up to the first differing
    /// segment; Firebase's documentation says any, so every segment is checked first. A negative
    /// segment (`5.12.-3.4`) reads as a number in JavaScript, but the Go, Java and Python Admin SDKs
    /// refuse such a version: they are followed, so a template means the same in every backend.
    static func compareVersions(_ actual: String, _ target: String) -> Int? {
        let maxSegments = 5
        func segments(_ version: String) -> [Double]? {
            let parts = version.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count <= maxSegments else { return nil }
            var numbers: [Double] = []
            for part in parts {
                guard let number = JavaScript.number(String(part)), number >= 0 else { return nil }
                numbers.append(number)
            }
            return numbers + Array(repeating: 0, count: maxSegments - numbers.count)
        }
        guard let a = segments(actual), let b = segments(target) else { return nil }
        for (x, y) in zip(a, b) where x != y {
            return x < y ? -1 : 1
        }
        return 0
    }
}

/// The JavaScript conversions the Admin SDK's conditions rely on, so that a template means the same
/// on the device as in a Node.js backend.
enum JavaScript {
    /// `Number(text)`, with `nil` for NaN: surrounding white space is ignored, the empty string is 0,
    /// decimal literals with optional sign, fraction and exponent, `Infinity`, and unsigned
    /// `0x`/`0o`/`0b` integers. Anything else (`"12abc"`, `"1_000"`, `"nan"`, `"inf"`) is not a number.
    static func number(_ text: String) -> Double? {
        let s = trimmed(text)
        switch s {
        case "": return 0
        case "Infinity", "+Infinity": return .infinity
        case "-Infinity": return -.infinity
        default: break
        }
        let bytes = Array(s.utf8)
        if bytes.count > 2, bytes[0] == UInt8(ascii: "0") {
            let radix: Double? =
                switch bytes[1] | 0x20 {
                case UInt8(ascii: "x"): 16
                case UInt8(ascii: "o"): 8
                case UInt8(ascii: "b"): 2
                default: nil
                }
            if let radix {
                var value = 0.0
                for byte in bytes[2...] {
                    guard let digit = byte.hexDigitValue, Double(digit) < radix else { return nil }
                    value = value * radix + Double(digit)
                }
                return value
            }
        }
        guard isDecimalLiteral(bytes) else { return nil }
        // Swift's parser takes the same decimal syntax (and more, which the check above excludes).
        return Double(s)
    }

    /// `[+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)?`
    private static func isDecimalLiteral(_ bytes: [UInt8]) -> Bool {
        var i = 0
        func digits() -> Int {
            let start = i
            while i < bytes.count, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9") { i += 1 }
            return i - start
        }
        func skip(_ characters: String) -> Bool {
            guard i < bytes.count, characters.utf8.contains(bytes[i]) else { return false }
            i += 1
            return true
        }
        _ = skip("+-")
        var mantissa = digits()
        if skip(".") { mantissa += digits() }
        guard mantissa > 0 else { return false }
        if skip("eE") {
            _ = skip("+-")
            guard digits() > 0 else { return false }
        }
        return i == bytes.count
    }

    /// `String.prototype.trim`: strips JavaScript white space and line terminators from both ends.
    static func trimmed(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !isWhitespace($0) }),
            let last = scalars.lastIndex(where: { !isWhitespace($0) })
        else { return "" }
        return String(scalars[first...last])
    }

    /// ECMAScript WhiteSpace and LineTerminator: tab, vertical tab, form feed, space, no-break space,
    /// the byte-order mark, the other space separators (Zs), LF, CR, LS and PS. Unlike Unicode's
    /// White_Space property, U+0085 (NEL) is not one; U+FEFF is.
    private static func isWhitespace(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09...0x0D, 0x20, 0xA0, 0x1680, 0x2000...0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
            true
        default:
            false
        }
    }
}
