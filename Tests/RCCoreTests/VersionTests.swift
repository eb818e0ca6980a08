import Foundation
import RCCore
import Testing

/// Version ordering for update checks: `dotted` and dpkg's `debian` scheme.
@Suite struct DottedVersionTests {
    static func v(_ text: String) throws -> DottedVersion { try DottedVersion(text, origin: "test") }

    /// (lower, higher) or equal pairs: "<" means a < b, "=" means equal.
    static let pairs: [(String, String, String)] = [
        ("1.2.3", "<", "1.2.4"), ("1.2.3", "<", "1.3.0"), ("1.2.3", "<", "2.0.0"), ("1.2.3", "=", "1.2.3"),
        ("1.2.3", "=", "1.2.3.0"), ("1.2.3.0", "=", "1.2.3"), ("1.2.3", "<", "1.2.3.1"), ("1.2.3.400", "<", "1.2.4"),
        ("1.2.3.999", "<", "1.2.4.0"), ("1.2.10", ">", "1.2.9"), ("1.10.0", ">", "1.9.9"), ("10.0.0", ">", "9.99.99"),
        ("01.02.03", "=", "1.2.3"), ("1.2.03", "=", "1.2.3"), ("0.0.0", "<", "0.0.1"), ("0.0.0", "=", "0.0.0.0"),
        ("0.0.0.1", ">", "0.0.0"), ("1.0.0", ">", "0.999.999.999"), ("2.0.0.0", ">", "1.99.99.99"),
        ("1.2.3.4", "<", "1.2.3.5"), ("1.2.3.10", ">", "1.2.3.9"), ("4294967296.0.0", ">", "4294967295.0.0"),
        ("18446744073709551615.0.0", ">", "18446744073709551614.9.9"), ("1.2.3", "<", "1.2.3.00001"),
        ("1.2.3.0000", "=", "1.2.3"), ("7.0.0", ">", "6.9.9.9999"), ("1.0.10", ">", "1.0.9.9"),
        ("3.2.1", "<", "3.10.0"), ("0.9.0", "<", "0.10.0"), ("1.2.0", "=", "1.2.0.0"), ("1.1.1.1", "<", "1.1.1.2"),
        ("100.0.0", ">", "99.0.0"), ("1.0.0", "<", "1.0.0.1"), ("2.5.0", ">", "2.4.99"), ("5.5.5.5", "=", "5.5.5.5"),
        ("0.0.1", "<", "0.1.0"), ("0.1.0", "<", "1.0.0"), ("9.9.9", "<", "9.9.10"), ("1.2.3", ">", "1.2.2.999"),
        ("12.0.0", ">", "2.0.0"), ("1.02.0", "<", "1.3.0"), ("1.20.0", ">", "1.3.0"), ("3.0.0.1", ">", "3.0.0"),
        ("6.1.0", "=", "006.001.000.000"), ("1.2.4.0", ">", "1.2.3.400"), ("8.0.0", "<", "8.0.0.8"),
        ("1.5.0", ">", "1.4.9.500"), ("2.0.1", ">", "2.0.0.9"), ("1.0.0.0", "=", "1.0.0"), ("0.0.0.0", "<", "0.0.0.1"),
        ("11.11.11", ">", "11.11.2"), ("1.9.0", "<", "1.10.0"), ("2.3.4", "=", "2.3.4.0"),
        ("4.0.0", ">", "3.999.999.999"),
        ("1.2.3.5", "<", "1.2.4.0"), ("13.0.0.1", ">", "13.0.0"), ("1.1.0", ">", "1.0.99"), ("5.0.0", "<", "5.0.1"),
        ("0.2.0", ">", "0.1.99"), ("3.3.3", "=", "3.3.3.0"),
    ]

    @Test(arguments: pairs)
    func ordering(_ a: String, _ relation: String, _ b: String) throws {
        let x = try Self.v(a)
        let y = try Self.v(b)
        switch relation {
        case "<": #expect(x < y); #expect(!(y < x)); #expect(x != y)
        case ">": #expect(y < x); #expect(!(x < y)); #expect(x != y)
        default: #expect(x == y); #expect(!(x < y)); #expect(!(y < x))
        }
    }

    @Test func atLeastSixtyPairs() { #expect(Self.pairs.count >= 60) }

    @Test(arguments: [
        ("1.2", "expected 3 or 4 dot-separated numbers (X.Y.Z[.B]), found 2 part(s)"),
        ("1", "expected 3 or 4 dot-separated numbers (X.Y.Z[.B]), found 1 part(s)"),
        ("1.2.3.4.5", "expected 3 or 4 dot-separated numbers (X.Y.Z[.B]), found 5 part(s)"),
        ("", "expected 3 or 4 dot-separated numbers (X.Y.Z[.B]), found 1 part(s)"),
        ("1..3", "part 2 is empty"),
        ("1.2.3.", "part 4 is empty"),
        (".1.2", "part 1 is empty"),
        ("1.2.3b", "part 3 \"3b\" is not a decimal number"),
        ("1.2.3-beta", "part 3 \"3-beta\" is not a decimal number"),
        ("v1.2.3", "part 1 \"v1\" is not a decimal number"),
        ("-1.2.3", "part 1 \"-1\" is not a decimal number"),
        ("+1.2.3", "part 1 \"+1\" is not a decimal number"),
        (" 1.2.3", "part 1 \" 1\" is not a decimal number"),
        ("1.2.3 ", "part 3 \"3 \" is not a decimal number"),
        ("1. 2.3", "part 2 \" 2\" is not a decimal number"),
        ("1.2.18446744073709551616", "part 3 \"18446744073709551616\" is too large"),
        ("1.2.x", "part 3 \"x\" is not a decimal number"),
        ("1.2.٣", "part 3 \"٣\" is not a decimal number"),
    ])
    func invalid(_ text: String, _ reason: String) {
        #expect(throws: VersionError(value: text, origin: "linux_required_update version", reason: reason)) {
            try DottedVersion(text, origin: "linux_required_update version")
        }
    }

    @Test func errorNamesValueAndKey() {
        let error = VersionError(value: "1.2", origin: "linux_required_update version", reason: "why")
        #expect(error.description == "linux_required_update version: invalid version \"1.2\": why")
    }
}

@Suite struct DebianVersionTests {
    static func v(_ text: String) throws -> DebianVersion { try DebianVersion(text, origin: "test") }

    /// Including the ordering examples of deb-version(7) and Debian Policy §5.6.12.
    static let pairs: [(String, String, String)] = [
        ("1.0", "<", "1.1"), ("1.0", "<", "1.0.1"), ("1.0~rc1", "<", "1.0"), ("1.0~rc1", "<", "1.0~rc2"),
        ("1.0~~", "<", "1.0~"), ("1.0~~a", "<", "1.0~"), ("1.0~", "<", "1.0"), ("1.0", "<", "1.0a"),
        ("1.0a", "<", "1.0b"), ("1.0a", "<", "1.0+"), ("1.0+", "<", "1.0+a"),
        ("1.0a", "<", "1.0.") /* letters sort before non-letters */, ("1.0", "<", "1.0-1"), ("1.0-1", "<", "1.0-2"),
        ("1.0-1", "<", "1.0-1.1"),
        ("1.0-1", "<", "1.0-1+b1"), ("1.0-1~bpo1", "<", "1.0-1"), ("1:0.9", ">", "1.0"), ("1:1.0", ">", "2.0"),
        ("2:1.0", ">", "1:9.9"), ("0:1.0", "=", "1.0"), ("1.0", "=", "1.0-0"), ("1.0-0", "=", "1.0"),
        ("1.00", "=", "1.0"), ("1.000", "=", "1.0"), ("1.01", "=", "1.1"), ("1.002", "<", "1.10"),
        ("1.9", "<", "1.10"), ("1.10", ">", "1.9"), ("2.6.32", "<", "2.6.32.1"), ("2.6.32-5", "<", "2.6.32-10"),
        ("7.6-0", "<", "7.6p2-4"),
        ("1.2.3", "<", "1.2.3a"), ("1.2.3", "<", "1.2.3+dfsg"), ("1.2.3+dfsg", "<", "1.2.4"),
        ("1.2.3~beta", "<", "1.2.3"),
        ("0.1", "<", "0.1.0"), ("0.1.0", "<", "0.1.0.0"),
        ("1.0+b1", ">", "1.0"), ("1.0-1+deb12u1", ">", "1.0-1"), ("1.0-1+deb12u1", "<", "1.0-1+deb12u2"),
        ("1.0-1+deb12u10", ">", "1.0-1+deb12u9"), ("2.36-9+deb12u4", "<", "2.36-9+deb12u13"),
        ("252.38-1~deb12u1", "<", "252.39-1~deb12u2"), ("1a", "<", "1b"), ("1A", "<", "1a"), ("1Z", "<", "1a"),
        ("1.0~a", "<", "1.0~b"), ("1.0~b", "<", "1.0"), ("1:1.0~rc1-1", "<", "1:1.0-1"), ("10", ">", "9"),
        ("1.0.0", ">", "1.0"), ("1.0-a", "<", "1.0-b"), ("1.0-1a", "<", "1.0-1b"), ("0.9.9", "<", "0.10"),
        ("3.0", "<", "3.0+really2.9"),
        ("2.0~~rc1", "<", "2.0~rc1"), ("1.2-3", ">", "1.2-2.9"), ("1.2-3.1", ">", "1.2-3"),
        ("4.0+git20200101", ">", "4.0"),
        ("4.0~git20200101", "<", "4.0"), ("1.0.0~alpha", "<", "1.0.0~beta"), ("1.0-1", "=", "1.0-01"),
        ("9:1", ">", "8:99"), ("1:2:3", ">", "1:2") /* colon in upstream with an epoch */,
        ("1.0-1-2", ">", "1.0-1-1") /* the last hyphen splits off the revision */,
    ]

    @Test(arguments: pairs)
    func ordering(_ a: String, _ relation: String, _ b: String) throws {
        let x = try Self.v(a)
        let y = try Self.v(b)
        switch relation {
        case "<": #expect(x < y); #expect(!(y < x))
        case ">": #expect(y < x); #expect(!(x < y))
        default: #expect(x == y); #expect(!(x < y)); #expect(!(y < x))
        }
    }

    @Test func atLeastSixtyPairs() { #expect(Self.pairs.count >= 60) }

    /// dpkg itself is the reference: every pair is checked against `dpkg --compare-versions`.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/dpkg")))
    func agreesWithDpkg() throws {
        for (a, relation, b) in Self.pairs {
            let op = relation == "<" ? "lt" : relation == ">" ? "gt" : "eq"
            let dpkg = Process()
            dpkg.executableURL = URL(fileURLWithPath: "/usr/bin/dpkg")
            dpkg.arguments = ["--compare-versions", a, op, b]
            dpkg.standardError = FileHandle.nullDevice
            try dpkg.run()
            dpkg.waitUntilExit()
            #expect(dpkg.terminationStatus == 0, "dpkg disagrees: \(a) \(op) \(b)")
        }
    }

    @Test(arguments: [
        ("", "version string is empty"),
        ("   ", "version string is empty"),
        ("1.0 beta", "version string has embedded spaces"),
        (":1.0", "epoch in version is empty"),
        ("a:1.0", "epoch in version is not number"),
        ("-1:1.0", "epoch in version is negative"),
        ("99999999999:1.0", "epoch in version is too big"),
        ("1:", "nothing after colon in version number"),
        ("1.0-", "revision number is empty"),
        ("-1", "version number is empty"),
        ("a1.0", "version number does not start with digit"),
        ("~1.0", "version number does not start with digit"),
        ("1.0_1", "invalid character in version number"),
        ("1.0@", "invalid character in version number"),
        ("1.0-1_1", "invalid character in revision number"),
        ("1.0-1=2", "invalid character in revision number"),
        ("1.0-1:2", "epoch in version is not number"),
    ])
    func invalid(_ text: String, _ reason: String) {
        #expect(throws: VersionError(value: text, origin: "test", reason: reason)) { try Self.v(text) }
    }

    @Test func surroundingSpaceIsTrimmedAsDpkgDoes() throws {
        #expect(try Self.v(" 1.0-1 ") == Self.v("1.0-1"))
    }
}
