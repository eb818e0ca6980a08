import RCCore
import TestSupport
import Testing

/// The last accepted signed version, kept in a file of its own.
@Suite struct SignedVersionRecordTests {
    @Test func aRecordSurvivesItsFileAndDamageIsAnError() throws {
        try TemporaryDirectory.with { directory in
            let path = directory.file("signed-version.json")
            #expect(try SignedVersionRecord.load(path) == nil)
            let record = SignedVersionRecord(
                version: 12, documentDigest: String(repeating: "ab", count: 32),
                expires: Timestamp(iso8601: "2030-01-01T00:00:00Z")!,
                acceptedAt: Timestamp(iso8601: "2026-12-02T00:00:00Z")!)
            try record.save(path)
            #expect(try SignedVersionRecord.load(path) == record)
            try directory.write("signed-version.json", "{\"version\": 12")
            #expect(throws: DocumentError.self) { try SignedVersionRecord.load(path) }
        }
    }

    @Test func expiringSoonIsWithinADay() {
        let now = Timestamp(iso8601: "2026-12-02T00:00:00Z")!
        let record = SignedVersionRecord(
            version: 1, documentDigest: "", expires: now + .seconds(3_600), acceptedAt: now)
        #expect(record.expiresSoon(now: now))
        #expect(!record.expiresSoon(now: now + .seconds(-2 * 86_400)))
    }
}
