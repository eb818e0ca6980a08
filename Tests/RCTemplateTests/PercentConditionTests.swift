import Foundation
import RCCore
import RCTemplate
import Testing

/// percent conditions: the device's micro-percentile, computed here independently of the product
/// code (the system's sha256sum and decimal arithmetic), checked at the exact boundaries.
@Suite struct PercentConditionTests {
    struct Bucket: Sendable, CustomTestStringConvertible {
        let seed: String
        let deviceId: String
        var testDescription: String { "seed \"\(seed)\", device \"\(deviceId)\"" }
    }

    static let buckets: [Bucket] = [
        Bucket(seed: "", deviceId: "device-1"),
        Bucket(seed: "", deviceId: "fG7pZ2kqR4e1xY9bW3nM0a"),
        Bucket(seed: "seed", deviceId: "device-1"),
        Bucket(seed: "rollout_2025", deviceId: "fG7pZ2kqR4e1xY9bW3nM0a"),
        Bucket(seed: "kiosk-experiment", deviceId: "kiosk-berlin-12"),
        Bucket(seed: "ü-seed", deviceId: "Gerät-ä"),
    ]

    /// The hex SHA-256 of `text` (its UTF-8 bytes, no newline: `echo -n`) from /usr/bin/sha256sum.
    static func sha256sum(_ text: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        try input.fileHandleForWriting.write(contentsOf: Data(text.utf8))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        return String(String(decoding: data, as: UTF8.self).prefix(64))
    }

    /// The hex number modulo 10^8: converted to decimal digits in full (schoolbook multiply by 16 and
    /// add, least significant digit first), then the last eight digits read off.
    static func moduloHundredMillion(hex: String) -> Int {
        var decimal: [Int] = [0]
        for character in hex {
            var carry = Int(String(character), radix: 16)!
            for i in decimal.indices {
                let product = decimal[i] * 16 + carry
                decimal[i] = product % 10
                carry = product / 10
            }
            while carry > 0 {
                decimal.append(carry % 10)
                carry /= 10
            }
        }
        return decimal.prefix(8).reversed().reduce(0) { $0 * 10 + $1 }
    }

    static func expectedPercentile(_ bucket: Bucket) throws -> Int {
        let input = bucket.seed.isEmpty ? bucket.deviceId : bucket.seed + "." + bucket.deviceId
        let hex = try sha256sum(input)
        #expect(hex.count == 64)
        return moduloHundredMillion(hex: hex)
    }

    static func percent(_ op: String, seed: String?, microPercent: Int? = nil, range: (Int, Int)? = nil) -> String {
        var fields = [#""percentOperator": "\#(op)""#]
        if let seed { fields.append(#""seed": \#(TemplateFixtures.json(seed))"#) }
        if let microPercent { fields.append(#""microPercent": \#(microPercent)"#) }
        if let (lower, upper) = range {
            fields.append(
                #""microPercentRange": {"microPercentLowerBound": \#(lower), "microPercentUpperBound": \#(upper)}"#)
        }
        return #"{"percent": {"# + fields.joined(separator: ", ") + "}}"
    }

    @Test func decimalReductionIsRight() {
        #expect(Self.moduloHundredMillion(hex: "0") == 0)
        #expect(Self.moduloHundredMillion(hex: "5F5E0FF") == 99_999_999)
        #expect(Self.moduloHundredMillion(hex: "5F5E100") == 0)
        #expect(Self.moduloHundredMillion(hex: "FFFFFFFFFFFFFFFF") == Int(UInt64.max % 100_000_000))
    }

    @Test(arguments: buckets) func lessOrEqualAtTheBoundary(_ bucket: Bucket) throws {
        let x = try Self.expectedPercentile(bucket)
        func holds(_ bound: Int) throws -> Bool {
            try TemplateFixtures.holds(
                Self.percent("LESS_OR_EQUAL", seed: bucket.seed, microPercent: bound), deviceId: bucket.deviceId)
        }
        #expect(try !holds(x - 1))
        #expect(try holds(x))
        #expect(try holds(x + 1))
    }

    @Test(arguments: buckets) func greaterThanAtTheBoundary(_ bucket: Bucket) throws {
        let x = try Self.expectedPercentile(bucket)
        func holds(_ bound: Int) throws -> Bool {
            try TemplateFixtures.holds(
                Self.percent("GREATER_THAN", seed: bucket.seed, microPercent: bound), deviceId: bucket.deviceId)
        }
        #expect(try holds(x - 1))
        #expect(try !holds(x))
        #expect(try !holds(x + 1))
    }

    @Test(arguments: buckets) func betweenExcludesLowerIncludesUpper(_ bucket: Bucket) throws {
        let x = try Self.expectedPercentile(bucket)
        func holds(_ lower: Int, _ upper: Int) throws -> Bool {
            try TemplateFixtures.holds(
                Self.percent("BETWEEN", seed: bucket.seed, range: (lower, upper)), deviceId: bucket.deviceId)
        }
        #expect(try holds(x - 1, x))
        #expect(try holds(x - 1, x + 1))
        #expect(try !holds(x, x + 1))
        #expect(try !holds(x - 2, x - 1))
        #expect(try holds(0 - 1, 100_000_000))
    }

    @Test func missingOrEmptySeedHashesTheDeviceIdAlone() throws {
        let bucket = Bucket(seed: "", deviceId: "device-1")
        let x = try Self.expectedPercentile(bucket)
        for seed in [nil, ""] as [String?] {
            #expect(try TemplateFixtures.holds(Self.percent("LESS_OR_EQUAL", seed: seed, microPercent: x)))
            #expect(try !TemplateFixtures.holds(Self.percent("LESS_OR_EQUAL", seed: seed, microPercent: x - 1)))
        }
    }

    @Test func missingDeviceIdIsFalse() throws {
        #expect(try !TemplateFixtures.holds(Self.percent("GREATER_THAN", seed: nil, microPercent: -1), deviceId: ""))
        #expect(
            try !TemplateFixtures.holds(
                Self.percent("LESS_OR_EQUAL", seed: "s", microPercent: 100_000_000), deviceId: ""))
        #expect(try !TemplateFixtures.holds(Self.percent("BETWEEN", seed: nil, range: (-1, 100_000_000)), deviceId: ""))
    }

    @Test func missingBoundsAreZero() throws {
        let x = try Self.expectedPercentile(Bucket(seed: "", deviceId: "device-1"))
        #expect(x > 0)
        #expect(try !TemplateFixtures.holds(Self.percent("LESS_OR_EQUAL", seed: nil)))
        #expect(try TemplateFixtures.holds(Self.percent("GREATER_THAN", seed: nil)))
        #expect(try !TemplateFixtures.holds(Self.percent("BETWEEN", seed: nil)))
        #expect(
            try TemplateFixtures.holds(
                #"{"percent": {"percentOperator": "BETWEEN", "microPercentRange": {"microPercentUpperBound": 100000000}}}"#
            ))
    }

    @Test func boundsMayBeQuotedIntegers() throws {
        let x = try Self.expectedPercentile(Bucket(seed: "", deviceId: "device-1"))
        #expect(
            try TemplateFixtures.holds(#"{"percent": {"percentOperator": "LESS_OR_EQUAL", "microPercent": "\#(x)"}}"#))
        #expect(
            try !TemplateFixtures.holds(
                #"{"percent": {"percentOperator": "LESS_OR_EQUAL", "microPercent": "\#(x - 1)"}}"#))
    }

    @Test func unspecifiedOperatorIsFalseAndUnknownOneIsReported() throws {
        let unspecified = try TemplateFixtures.evaluate(
            TemplateFixtures.template(condition: Self.percent("UNKNOWN", seed: nil, microPercent: 100_000_000)))
        #expect(unspecified.values == ["p": "no"])
        #expect(unspecified.unsupportedConditions == [])
        let missing = try TemplateFixtures.evaluate(
            TemplateFixtures.template(condition: #"{"percent": {"microPercent": 100000000}}"#))
        #expect(missing.values == ["p": "no"])
        #expect(missing.unsupportedConditions == [])
        let unknown = try TemplateFixtures.evaluate(
            TemplateFixtures.template(condition: Self.percent("LESS_THAN", seed: nil, microPercent: 100_000_000)))
        #expect(unknown.values == ["p": "no"])
        #expect(unknown.unsupportedConditions == ["c"])
    }

    @Test func boundMustBeANumber() {
        #expect(
            throws: DocumentError(
                document: TemplateFixtures.documentName,
                reason: #"conditions[0].condition.percent.microPercent must be a number, got "half""#)
        ) {
            try TemplateFixtures.holds(#"{"percent": {"percentOperator": "LESS_OR_EQUAL", "microPercent": "half"}}"#)
        }
        #expect(
            throws: DocumentError(
                document: TemplateFixtures.documentName,
                reason:
                    "conditions[0].condition.percent.microPercentRange.microPercentUpperBound must be a number, got boolean"
            )
        ) {
            try TemplateFixtures.holds(
                #"{"percent": {"percentOperator": "BETWEEN", "microPercentRange": {"microPercentUpperBound": true}}}"#)
        }
    }
}
