import Foundation
import TestSupport
import Testing

/// `rcadmin template versions --end-version N --since TIME --until TIME`: listVersions' filters
/// (endVersionNumber, startTime, endTime), sent as the query parameters Google documents to the
/// fake Remote Config server, which filters as Google does (end version inclusive, start time
/// inclusive, end time exclusive); bad values are usage errors before anything is asked.
@Suite struct TemplateVersionFilterTests {
    typealias Fixture = AdminTests.Fixture

    /// The listed version numbers, newest first.
    func listed(_ fixture: Fixture, _ filters: [String]) throws -> [String] {
        let result = try fixture.rcadmin(["template", "versions", "--json"] + filters)
        #expect(result.status == 0, "\(filters): \(result.stderr)")
        let versions = try #require(
            JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]], "\(result.stdout)")
        return versions.compactMap { $0["versionNumber"] as? String }
    }

    @Test func theFiltersAreSentAsListVersionsQueryParameters() throws {
        let fixture = try Fixture()
        try fixture.setRequiredUpdates(["1.1.0", "1.2.0"])
        let all = try fixture.rcadmin(["template", "versions", "--json"])
        let versions = try #require(JSONSerialization.jsonObject(with: Data(all.stdout.utf8)) as? [[String: Any]])
        let times = Dictionary(
            uniqueKeysWithValues: versions.compactMap { v in
                (v["versionNumber"] as? String).flatMap { n in (v["updateTime"] as? String).map { (n, $0) } }
            })
        try #require(Set(times.keys) == ["1", "2", "3"], "\(all.stdout)")

        #expect(try listed(fixture, ["--end-version", "2"]) == ["2", "1"])
        let since = try #require(times["3"])
        #expect(try listed(fixture, ["--since", since]) == ["3"])
        #expect(try listed(fixture, ["--until", since]) == ["2", "1"])
        #expect(try listed(fixture, ["--end-version", "2", "--since", try #require(times["2"])]) == ["2"])
        // What went out: the documented names, the time as RFC 3339 UTC.
        let query = try #require(fixture.requests("rc-versions").last?["query"] as? [String: Any])
        #expect(query["endVersionNumber"] as? String == "2", "\(query)")
        #expect((query["startTime"] as? String)?.hasSuffix("Z") == true, "\(query)")
        // An offset is the same instant in UTC.
        #expect(
            try listed(fixture, ["--since", "2000-01-01T01:00:00+01:00", "--until", "2999-01-01T00:00:00Z"]).count == 3)
        let offset = try #require(fixture.requests("rc-versions").last?["query"] as? [String: Any])
        #expect(offset["startTime"] as? String == "2000-01-01T00:00:00Z", "\(offset)")
        #expect(offset["endTime"] as? String == "2999-01-01T00:00:00Z", "\(offset)")
    }

    @Test func badFiltersAreUsageErrorsBeforeAnyCall() throws {
        let fixture = try Fixture(seed: nil)
        let cases: [([String], String)] = [
            (["--end-version", "0"], "--end-version must be a whole number from 1, got '0'"),
            (["--end-version", "v3"], "--end-version must be a whole number from 1, got 'v3'"),
            (
                ["--since", "yesterday"],
                "--since must be an RFC 3339 time such as 2026-12-01T08:00:00Z, got 'yesterday'"
            ),
            (["--until", "2026-12-01"], "--until must be an RFC 3339 time"),
            (["--until", "2026-02-30T00:00:00Z"], "--until must be an RFC 3339 time"),
            (
                ["--since", "2026-12-02T00:00:00Z", "--until", "2026-12-01T00:00:00Z"],
                "--since 2026-12-02T00:00:00Z is not before --until 2026-12-01T00:00:00Z"
            ),
        ]
        for (filters, says) in cases {
            let result = try fixture.rcadmin(["template", "versions"] + filters)
            #expect(result.status == 64, "\(filters): \(result.stderr)")
            #expect(result.stderr.hasPrefix("Error: \(says)"), "\(filters): \(result.stderr)")
        }
        #expect(fixture.requests("oauth-token").isEmpty, "no usage error got as far as Google")
    }
}
