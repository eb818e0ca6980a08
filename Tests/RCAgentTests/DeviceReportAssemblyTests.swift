import RCCore
import RCStore
import TestSupport
import Testing

@testable import RCAgent

/// The device report as ``DeviceReportAssembly`` makes it from a real store's status.
@Suite struct DeviceReportAssemblyTests {
    private let t0 = Timestamp(milliseconds: 1_700_000_000_000)

    @Test func aFailedFetchCarriesItsErrorAndAStaleFlagItsTime() throws {
        try TemporaryDirectory.with { (dir) throws in
            let store = try StateStore.openForWriting(path: dir.file("state.db"))
            try store.markStale(reason: "ping", at: t0)
            try store.recordFetch(
                .failure(error: "HTTP 500", backoffStep: 1, nextAttempt: nil, throttledUntil: nil), at: t0,
                activate: false)
            let report = DeviceReportAssembly.report(
                deviceId: "d", online: true, at: t0, status: try store.status(), installed: nil, activities: 2,
                config: AgentConfig(), value: { _ in nil })
            #expect(report.stale.set && report.stale.since == t0)
            #expect(report.lastFetch.status == "failure" && report.lastFetch.error == "HTTP 500")
            #expect(report.update == .unknown && report.appInstalled == nil && report.activities == 2)
        }
    }

    @Test func withoutAStatusTheReportSaysNothingIsKnown() {
        let installed = InstalledVersion(version: "1.0.0", origin: "dpkg")
        let report = DeviceReportAssembly.report(
            deviceId: "d", online: false, at: t0, status: nil, installed: installed, activities: 0,
            config: AgentConfig(), value: { _ in nil })
        #expect(!report.stale.set && report.templateVersion == nil && report.lastFetch.status == nil)
        #expect(report.appInstalled == "1.0.0" && report.update == .none)
    }

    @Test func aDeviceThatRequiresSignaturesReportsItsAcceptedVersionAndExpiry() throws {
        try TemporaryDirectory.with { (dir) throws in
            var config = AgentConfig()
            config.stateDirectory = dir.path
            let plain = DeviceReportAssembly.report(
                deviceId: "d", online: true, at: t0, status: nil, installed: nil, activities: 0, config: config,
                value: { _ in nil })
            #expect(plain.signature == nil && plain.json["signature"] == .null)
            config.trustedKeys = dir.file("keys.pem")
            // Required, none accepted yet: the member is there, its version and expiry null.
            let waiting = DeviceReportAssembly.report(
                deviceId: "d", online: true, at: t0, status: nil, installed: nil, activities: 0, config: config,
                value: { _ in nil })
            #expect(waiting.signature == DeviceReport.Signature(version: nil, expires: nil))
            #expect(waiting.json["signature"]?["version"] == .null && waiting.json["signature"]?["expires"] == .null)
            #expect(try DeviceReport(parsing: Array(waiting.json.compactText.utf8)) == waiting)
            try SignedVersionRecord(
                version: 41, documentDigest: String(repeating: "a", count: 64), expires: t0 + .seconds(3_600),
                acceptedAt: t0
            ).save(config.signedVersionPath)
            let report = DeviceReportAssembly.report(
                deviceId: "d", online: true, at: t0, status: nil, installed: nil, activities: 0, config: config,
                value: { _ in nil })
            #expect(report.signature == DeviceReport.Signature(version: 41, expires: t0 + .seconds(3_600)))
            #expect(report.json["signature"]?["version"] == .integer(41))
            // What the fleet view reads back.
            #expect(try DeviceReport(parsing: Array(report.json.compactText.utf8)) == report)
        }
    }
}
