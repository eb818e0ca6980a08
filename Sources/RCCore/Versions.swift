/// A version that cannot be read: the value, the key or place it came from, and why.
public struct VersionError: Error, CustomStringConvertible, Sendable, Equatable {
    public let value: String
    public let origin: String
    public let reason: String

    public init(value: String, origin: String, reason: String) {
        self.value = value
        self.origin = origin
        self.reason = reason
    }

    public var description: String { "\(origin): invalid version \"\(value)\": \(reason)" }
}

/// App versions in the `dotted` scheme: `X.Y.Z` or `X.Y.Z.B`, each part a non-negative decimal
/// number (leading zeros allowed). A missing build part is 0, so `1.2.3` equals `1.2.3.0`.
/// Unlike the lenient seed library, any other text makes the version invalid.
public struct DottedVersion: Sendable, Comparable, CustomStringConvertible {
    public let parts: [UInt64]
    public let text: String

    public init(_ text: String, origin: String) throws(VersionError) {
        func fail(_ reason: String) -> VersionError { VersionError(value: text, origin: origin, reason: reason) }
        let pieces = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (3...4).contains(pieces.count) else {
            throw fail("expected 3 or 4 dot-separated numbers (X.Y.Z[.B]), found \(pieces.count) part(s)")
        }
        var parts: [UInt64] = []
        for (index, piece) in pieces.enumerated() {
            guard !piece.isEmpty else { throw fail("part \(index + 1) is empty") }
            guard piece.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
                throw fail("part \(index + 1) \"\(piece)\" is not a decimal number")
            }
            guard let value = UInt64(piece) else { throw fail("part \(index + 1) \"\(piece)\" is too large") }
            parts.append(value)
        }
        if parts.count == 3 { parts.append(0) }
        self.parts = parts
        self.text = text
    }

    public static func < (a: DottedVersion, b: DottedVersion) -> Bool { a.parts.lexicographicallyPrecedes(b.parts) }
    public static func == (a: DottedVersion, b: DottedVersion) -> Bool { a.parts == b.parts }

    public var description: String { text }
}

/// Debian package versions, `[epoch:]upstream[-revision]`, validated and ordered exactly as dpkg
/// does (dpkg's lib/dpkg/parsehelp.c `parseversion` and lib/dpkg/version.c `verrevcmp`).
public struct DebianVersion: Sendable, Comparable, CustomStringConvertible {
    public let epoch: UInt32
    public let upstream: String
    public let revision: String
    public let text: String

    public init(_ text: String, origin: String) throws(VersionError) {
        func fail(_ reason: String) -> VersionError { VersionError(value: text, origin: origin, reason: reason) }
        // dpkg trims surrounding white space, then refuses any inside.
        let trimmed = String(text.trimmingSpaces())
        guard !trimmed.isEmpty else { throw fail("version string is empty") }
        guard !trimmed.contains(where: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }) else {
            throw fail("version string has embedded spaces")
        }
        var rest = Substring(trimmed)
        var epoch: UInt32 = 0
        if let colon = rest.firstIndex(of: ":") {
            let epochText = rest[..<colon]
            guard !epochText.isEmpty else { throw fail("epoch in version is empty") }
            if epochText.first == "-", epochText.count > 1,
                epochText.dropFirst().utf8.allSatisfy({ $0 >= 48 && $0 <= 57 })
            {
                throw fail("epoch in version is negative")
            }
            guard epochText.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
                throw fail("epoch in version is not number")
            }
            guard let value = UInt32(epochText), value <= UInt32(Int32.max) else {
                throw fail("epoch in version is too big")
            }
            epoch = value
            rest = rest[rest.index(after: colon)...]
            guard !rest.isEmpty else { throw fail("nothing after colon in version number") }
        }
        var upstream = rest
        var revision: Substring = ""
        if let hyphen = rest.lastIndex(of: "-") {
            upstream = rest[..<hyphen]
            revision = rest[rest.index(after: hyphen)...]
            guard !revision.isEmpty else { throw fail("revision number is empty") }
        }
        guard !upstream.isEmpty else { throw fail("version number is empty") }
        guard let first = upstream.first, first.isASCII, first.isNumber else {
            throw fail("version number does not start with digit")
        }
        func isAlnum(_ c: Character) -> Bool { c.isASCII && (c.isLetter || c.isNumber) }
        guard upstream.allSatisfy({ isAlnum($0) || ".-+~:".contains($0) }) else {
            throw fail("invalid character in version number")
        }
        guard revision.allSatisfy({ isAlnum($0) || ".+~".contains($0) }) else {
            throw fail("invalid character in revision number")
        }
        self.epoch = epoch
        self.upstream = String(upstream)
        self.revision = String(revision)
        self.text = text
    }

    public static func < (a: DebianVersion, b: DebianVersion) -> Bool { compare(a, b) < 0 }
    public static func == (a: DebianVersion, b: DebianVersion) -> Bool { compare(a, b) == 0 }

    public static func compare(_ a: DebianVersion, _ b: DebianVersion) -> Int {
        if a.epoch != b.epoch { return a.epoch < b.epoch ? -1 : 1 }
        let upstream = verrevcmp(Array(a.upstream.utf8), Array(b.upstream.utf8))
        return upstream != 0 ? upstream : verrevcmp(Array(a.revision.utf8), Array(b.revision.utf8))
    }

    /// dpkg's character weight: digits sort as 0 (handled by the numeric pass), letters by their
    /// code, `~` before everything (even the end of the string), other characters after letters.
    private static func order(_ c: UInt8?) -> Int {
        guard let c else { return 0 }
        if c >= 48 && c <= 57 { return 0 }
        if (c >= 65 && c <= 90) || (c >= 97 && c <= 122) { return Int(c) }
        if c == UInt8(ascii: "~") { return -1 }
        return Int(c) + 256
    }

    private static func verrevcmp(_ a: [UInt8], _ b: [UInt8]) -> Int {
        func isDigit(_ c: UInt8) -> Bool { c >= 48 && c <= 57 }
        var i = 0
        var j = 0
        while i < a.count || j < b.count {
            var firstDiff = 0
            while (i < a.count && !isDigit(a[i])) || (j < b.count && !isDigit(b[j])) {
                let ac = order(i < a.count ? a[i] : nil)
                let bc = order(j < b.count ? b[j] : nil)
                if ac != bc { return ac - bc }
                i += 1
                j += 1
            }
            while i < a.count && a[i] == 48 { i += 1 }
            while j < b.count && b[j] == 48 { j += 1 }
            while i < a.count && isDigit(a[i]) && j < b.count && isDigit(b[j]) {
                if firstDiff == 0 { firstDiff = Int(a[i]) - Int(b[j]) }
                i += 1
                j += 1
            }
            if i < a.count && isDigit(a[i]) { return 1 }
            if j < b.count && isDigit(b[j]) { return -1 }
            if firstDiff != 0 { return firstDiff }
        }
        return 0
    }

    public var description: String { text }
}

/// A version in the scheme the config names, compared within that scheme.
public enum AppVersion: Sendable, Comparable, CustomStringConvertible {
    case dotted(DottedVersion)
    case debian(DebianVersion)

    public init(_ text: String, scheme: VersionScheme, origin: String) throws(VersionError) {
        switch scheme {
        case .dotted: self = .dotted(try DottedVersion(text, origin: origin))
        case .debian: self = .debian(try DebianVersion(text, origin: origin))
        }
    }

    public static func < (a: AppVersion, b: AppVersion) -> Bool {
        switch (a, b) {
        case let (.dotted(x), .dotted(y)): x < y
        case let (.debian(x), .debian(y)): x < y
        default: false
        }
    }

    public var description: String {
        switch self {
        case let .dotted(v): v.text
        case let .debian(v): v.text
        }
    }
}
