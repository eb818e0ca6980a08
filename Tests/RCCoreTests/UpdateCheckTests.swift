import Foundation
import RCCore
import RCSystem
import Testing

@Suite struct UpdateCheckTests {
    let now = Timestamp(iso8601: "2026-11-29T12:00:00Z")!
    let checker = UpdateChecker(scheme: .dotted)

    func offer(_ version: String, deadline: String? = nil) -> String {
        var fields = [#""version": "\#(version)""#, #""download": "https://dl.example/app_\#(version).deb""#]
        if let deadline { fields.append(#""deadline": "\#(deadline)""#) }
        return "{" + fields.joined(separator: ", ") + "}"
    }

    func check(_ installed: String, required: String? = nil, recommended: String? = nil) throws(UpdateCheckError)
        -> UpdateVerdict
    {
        try checker.check(
            installed: installed, installedOrigin: "[App] Version=",
            offers: [
                (.required, "linux_required_update", required), (.recommended, "linux_recommended_update", recommended),
            ],
            now: now)
    }

    @Test func noOffersMeansNoUpdate() throws {
        #expect(try check("1.0.0").result == .none)
        #expect(try check("1.0.0", required: "", recommended: "  ").result == .none, "an empty value offers nothing")
    }

    @Test func olderInstalledVersionGetsTheUpdate() throws {
        #expect(try check("1.2.3", recommended: offer("1.2.4")).result == .recommended)
        #expect(try check("1.2.3", required: offer("1.2.4")).result == .required)
        #expect(try check("1.2.4", required: offer("1.2.4")).result == .none, "equal is current")
        #expect(try check("1.2.3.0", required: offer("1.2.3")).result == .none, "1.2.3 equals 1.2.3.0")
        #expect(try check("1.2.3.400", required: offer("1.2.4")).result == .required)
        #expect(try check("2.0.0", required: offer("1.9.9")).result == .none, "a newer install is not downgraded")
    }

    @Test func requiredBeatsRecommended() throws {
        let verdict = try check("1.0.0", required: offer("1.1.0"), recommended: offer("1.5.0"))
        #expect(verdict.result == .required)
        #expect(verdict.offer?.version == "1.1.0")
        let onlyRecommended = try check("1.1.0", required: offer("1.1.0"), recommended: offer("1.5.0"))
        #expect(onlyRecommended.result == .recommended)
        #expect(onlyRecommended.offer?.version == "1.5.0")
    }

    @Test func aRequiredUpdateIsNotHiddenByABrokenRecommendedValue() throws {
        #expect(try check("1.0.0", required: offer("1.1.0"), recommended: "{broken").result == .required)
        #expect(throws: UpdateCheckError.self) { try check("1.1.0", required: offer("1.1.0"), recommended: "{broken") }
    }

    @Test func deadlinePromotesARecommendedUpdateWithAFixedClock() throws {
        let before = try check("1.0.0", recommended: offer("1.1.0", deadline: "2026-11-29T12:00:01Z"))
        #expect(before.result == .recommended)
        #expect(!before.promotedByDeadline)
        let at = try check("1.0.0", recommended: offer("1.1.0", deadline: "2026-11-29T12:00:00Z"))
        #expect(at.result == .required)
        #expect(at.promotedByDeadline)
        let offset = try check("1.0.0", recommended: offer("1.1.0", deadline: "2026-11-29T13:00:00+02:00"))
        #expect(offset.result == .required, "13:00+02:00 is 11:00Z, before now")
        #expect(offset.offer?.deadline == Timestamp(iso8601: "2026-11-29T11:00:00Z"))
    }

    @Test(arguments: [
        ("{", "linux_required_update: invalid JSON"),
        ("[1]", "linux_required_update: expected a JSON object"),
        (#"{"download": "x"}"#, #"linux_required_update: missing "version""#),
        (#"{"version": "1.2.4"}"#, #"linux_required_update: missing "download""#),
        (#"{"version": "", "download": "x"}"#, #"linux_required_update: "version" is empty"#),
        (#"{"version": 124, "download": "x"}"#, #"linux_required_update: "version" must be a string, got number"#),
        (#"{"version": "1.2", "download": "x"}"#, #"linux_required_update version: invalid version "1.2""#),
        (
            #"{"version": "1.2.4", "download": "x", "deadline": "tomorrow"}"#,
            #""deadline" "tomorrow" is not an ISO 8601 time"#
        ),
    ])
    func badValuesCannotTell(_ value: String, _ message: String) {
        let error = #expect(throws: UpdateCheckError.self) { try check("1.2.3", required: value) }
        #expect(error?.reason.contains(message) == true, "\(error?.reason ?? "")")
    }

    @Test func badInstalledVersionCannotTell() {
        let error = #expect(throws: UpdateCheckError.self) { try check("1.2.x", required: offer("1.2.4")) }
        #expect(error?.reason == #"[App] Version=: invalid version "1.2.x": part 3 "x" is not a decimal number"#)
    }

    @Test func debianScheme() throws {
        let debian = UpdateChecker(scheme: .debian)
        let verdict = try debian.check(
            installed: "1.4.0-1", installedOrigin: "dpkg",
            offers: [(.required, "k", offer("1.4.0-1+deb12u1"))], now: now)
        #expect(verdict.result == .required)
        let tilde = try debian.check(
            installed: "1.4.0", installedOrigin: "dpkg", offers: [(.required, "k", offer("1.4.0~rc1"))], now: now)
        #expect(tilde.result == .none)
    }

    @Test func dpkgStatusDatabase() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("status-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        try """
        Package: kiosk-app
        Status: install ok installed
        Priority: optional
        Version: 1:2.4.0-3
        Description: the kiosk
         with a continuation line
         Version: 9.9.9

        Package: removed-app
        Status: deinstall ok config-files
        Version: 1.0

        """.write(to: file, atomically: true, encoding: .utf8)
        #expect(try DpkgStatus.installedVersion(of: "kiosk-app", statusFile: file.path) == "1:2.4.0-3")
        #expect(throws: UpdateCheckError("package removed-app is not installed (dpkg status)")) {
            try DpkgStatus.installedVersion(of: "removed-app", statusFile: file.path)
        }
        #expect(throws: UpdateCheckError("package nope is unknown to dpkg")) {
            try DpkgStatus.installedVersion(of: "nope", statusFile: file.path)
        }
    }

    @Test func realDpkgDatabaseKnowsItself() throws {
        guard FileManager.default.fileExists(atPath: DpkgStatus.defaultPath) else { return }
        let version = try DpkgStatus.installedVersion(of: "dpkg")
        #expect(try DebianVersion(version, origin: "dpkg") > DebianVersion("1.0", origin: "test"))
    }

    @Test func iso8601Parsing() {
        #expect(Timestamp(iso8601: "1970-01-01T00:00:00Z")?.milliseconds == 0)
        #expect(Timestamp(iso8601: "2027-01-31T00:00:00.250Z")?.iso8601 == "2027-01-31T00:00:00Z")
        #expect(Timestamp(iso8601: "2027-01-31T00:00:00.250Z")?.milliseconds == 1_801_353_600_250)
        for bad in [
            "", "2027-01-31", "2027-01-31T00:00:00", "2027-13-01T00:00:00Z", "2027-01-31T00:00:00Zjunk",
            "2027-01-31T00:00:00.Z",
        ] {
            #expect(Timestamp(iso8601: bad) == nil, "\(bad)")
        }
    }
}
