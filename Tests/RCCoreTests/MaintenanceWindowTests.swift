import RCCore
import RCSystem
import Testing

/// `[Activation] Window=`: the syntax, what a bad value says, and the `[Activation]` section as
/// the config reads it (errors with file and line).
@Suite struct MaintenanceWindowTests {
    private func window(_ text: String) throws -> MaintenanceWindow { try MaintenanceWindow.parse(text) }

    private func problem(_ text: String) -> String? {
        do {
            _ = try MaintenanceWindow.parse(text)
            return nil
        } catch {
            return error.description
        }
    }

    @Test func theDocumentedExamplesParse() throws {
        let weekdays = try window("Mon..Fri 02:00-04:00")
        #expect(weekdays.weekdays == 0b011_1110)
        #expect((weekdays.start, weekdays.end, weekdays.zone, weekdays.spansMidnight) == (120, 240, nil, false))
        let weekend = try window("Sat,Sun 00:00-24:00")
        #expect(weekend.weekdays == 0b100_0001)
        #expect((weekend.start, weekend.end) == (0, 1440))
        let night = try window("*-*-* 22:00-06:00 Europe/Berlin")
        #expect(night.weekdays == 0x7f)
        #expect((night.start, night.end, night.zone, night.spansMidnight) == (1320, 360, "Europe/Berlin", true))
    }

    @Test func weekdaysTakeFullNamesAnyCaseAndWrappingRanges() throws {
        #expect(try window("saturday..MON 10:00-11:00").weekdays == 0b100_0011)
        #expect(try window("Mon,Wed..Fri 9:00-9:30").weekdays == 0b011_1010)
        #expect(try window("07:00-08:00").weekdays == 0x7f)
        #expect(try window("Sun 22:00-00:00").end == 1440)
        #expect(try window("Sun 00:00-00:00").end == 1440)
    }

    @Test(arguments: [
        ("Mon..Fri", "needs a time range"),
        ("Funday 02:00-03:00", "'Funday' is not a weekday"),
        ("Mon 25:00-26:00", "needs a time range"),
        ("Mon 02:60-03:00", "needs a time range"),
        ("Mon 02:00-02:00", "is an empty range"),
        ("Mon,,Tue 02:00-03:00", "empty weekday"),
        ("2026-12-01 02:00-04:00", "not a weekday"),
        ("Mon *-*-01 02:00-04:00", "dates other than *-*-* are not supported"),
        ("Mon 02:00-04:00 ../../etc/passwd", "not a time zone"),
        ("Mon 02:00-04:00 /usr/share/zoneinfo/UTC", "not a time zone"),
        ("Mon 02:00-04:00 UTC extra", "after the zone name"),
        ("", "is empty"),
    ])
    func badWindowsSayWhatIsWrong(text: String, expected: String) {
        let message = problem(text)
        #expect(message?.contains(expected) == true, "\(text): \(message ?? "parsed")")
    }

    @Test func anOverlongValueIsRefusedBeforeItIsRead() {
        #expect(problem("Mon " + String(repeating: "x", count: 10_000)) == "is 10004 bytes long; at most 200 are taken")
    }

    @Test func theActivationSectionIsRead() throws {
        var config = AgentConfig()
        try config.apply(
            text: """
                [Activation]
                Window=Mon..Fri 02:00-04:00
                Window=Sat,Sun 00:00-24:00 UTC
                HealthCheck=/usr/lib/kiosk/healthy
                HealthTimeout=10s
                HoldLimit=30min
                History=5
                """, file: "/etc/rcagent/agent.conf")
        let settings = config.activationSettings
        #expect(settings.windows.windows.map(\.text) == ["Mon..Fri 02:00-04:00", "Sat,Sun 00:00-24:00 UTC"])
        #expect(settings.healthCheck == "/usr/lib/kiosk/healthy")
        #expect(settings.healthTimeout == .seconds(10))
        #expect(settings.holdLimit == .seconds(1800))
        #expect(settings.history == 5)
        #expect(config.assignments["Activation.Window"] == "Mon..Fri 02:00-04:00\nSat,Sun 00:00-24:00 UTC")
        // A drop-in's empty Window= clears them: any time again.
        try config.apply(text: "[Activation]\nWindow=\nHistory=\n", file: "/etc/rcagent/agent.conf.d/10.conf")
        #expect(config.activationSettings.windows.isUnrestricted)
        #expect(config.activationSettings.history == 20)
    }

    @Test func theBuiltInDefaultsAreTheDocumentedOnes() {
        let settings = AgentConfig().activationSettings
        #expect(settings.windows.isUnrestricted)
        #expect(settings.healthCheck == nil)
        #expect(settings.healthTimeout == .seconds(60))
        #expect(settings.holdLimit == .seconds(3600))
        #expect(settings.history == 20)
    }

    @Test func badActivationValuesNameFileAndLine() {
        var config = AgentConfig()
        do {
            try config.apply(
                text: "[Activation]\nWindow=Funday 02:00-03:00\nHealthCheck=healthy.sh\nHistory=0\nHoldLimit=0\n",
                file: "/etc/rcagent/agent.conf.d/50-window.conf")
            Issue.record("bad values were taken")
        } catch {
            let text = error.description
            #expect(
                text.contains(
                    "/etc/rcagent/agent.conf.d/50-window.conf:2: Window= 'Funday 02:00-03:00' 'Funday' is not a weekday"
                ))
            #expect(text.contains("50-window.conf:3: HealthCheck= must be an absolute path"))
            #expect(text.contains("50-window.conf:4: History= must be a number from 1 to 1000"))
            #expect(text.contains("50-window.conf:5: HoldLimit= must be greater than 0"))
        }
    }

    /// A well-formed zone name the zone database lacks is refused when the config is loaded, with
    /// the window's text; one it has passes.
    @Test func aZoneTheDatabaseLacksIsAConfigError() throws {
        var config = AgentConfig()
        try config.apply(
            text: "[Activation]\nWindow=Mon 02:00-04:00 Europe/Berlin\n", file: "/etc/rcagent/agent.conf")
        try config.validateWindowZones(exists: TimeZoneName.exists)
        try config.apply(
            text: "[Activation]\nWindow=Mon 02:00-04:00 Mars/Olympus\n", file: "/etc/rcagent/agent.conf.d/mars.conf")
        #expect(throws: ConfigError.self) { try config.validateWindowZones(exists: TimeZoneName.exists) }
        do { try config.validateWindowZones(exists: TimeZoneName.exists) } catch {
            #expect(
                error.description
                    == "/etc/rcagent/agent.conf.d/mars.conf:2: Window= 'Mon 02:00-04:00 Mars/Olympus' 'Mars/Olympus' is not a time zone in the system's zone database (e.g. Europe/Berlin)"
            )
        }
    }

    @Test func aMisspeltActivationKeyIsAWarningWithASuggestion() throws {
        var config = AgentConfig()
        try config.apply(text: "[Activation]\nHealthChek=/bin/true\n", file: "/etc/rcagent/agent.conf")
        #expect(config.warnings.first?.message.contains("did you mean 'HealthCheck'?") == true)
        try config.apply(text: "[Activaton]\nHistory=3\n", file: "/etc/rcagent/agent.conf")
        #expect(config.warnings.last?.message.contains("did you mean [Activation]?") == true)
    }
}
