import RCCore
import RCSystem
import Testing

/// When a fetched snapshot may become active: windows, holds and the `--now` override together.
@Suite struct ActivationGateTests {
    private let noon = Timestamp(milliseconds: 1_796_212_800_000)  // 2026-12-02T12:00:00Z

    private func windows(_ text: String...) throws -> WindowSchedule {
        WindowSchedule(try text.map { try MaintenanceWindow.parse($0) })
    }

    @Test func withoutWindowsOrHoldsEveryActivationGoesAhead() {
        #expect(ActivationGate.decide(at: noon, windows: WindowSchedule(), holds: .free) == .activate)
    }

    @Test func outsideEveryWindowItWaitsForTheNextOpening() throws {
        let nights = try windows("*-*-* 02:00-04:00 UTC")
        let opening = noon + .seconds(14 * 3600)
        #expect(
            ActivationGate.decide(at: noon, windows: nights, holds: .free) == .deferred(until: opening, why: .window))
        #expect(ActivationGate.decide(at: opening, windows: nights, holds: .free) == .activate)
    }

    @Test func aHoldDefersInsideAWindowAndAForgottenOneDoesNot() throws {
        let always = WindowSchedule()
        let limit = noon + .seconds(600)
        #expect(
            ActivationGate.decide(at: noon, windows: always, holds: .held(until: limit))
                == .deferred(until: limit, why: .hold))
        #expect(ActivationGate.decide(at: noon, windows: always, holds: .expired([])) == .activate)
    }

    @Test func withBothTheLaterEndDecides() throws {
        let nights = try windows("*-*-* 02:00-04:00 UTC")
        let opening = noon + .seconds(14 * 3600)
        #expect(
            ActivationGate.decide(at: noon, windows: nights, holds: .held(until: noon + .seconds(60)))
                == .deferred(until: opening, why: .window))
        #expect(
            ActivationGate.decide(at: noon, windows: nights, holds: .held(until: opening + .seconds(60)))
                == .deferred(until: opening + .seconds(60), why: .hold))
        #expect(
            ActivationGate.decide(at: noon, windows: nights, holds: .held(until: nil))
                == .deferred(until: nil, why: .hold))
    }

    @Test func nowOverridesWindowsAndHolds() throws {
        let nights = try windows("*-*-* 02:00-04:00 UTC")
        #expect(ActivationGate.decide(at: noon, windows: nights, holds: .held(until: nil), now: true) == .activate)
    }
}
