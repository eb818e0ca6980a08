import RCCore
import TestSupport
import Testing

/// `AgentConfig.loadForReading`: the config a read command (`get`, `status`) runs with. Every bad
/// line is a problem to warn about, never a failure; the lines around it still apply; a bad value
/// leaves its key at the built-in default. `load` keeps failing on the same files.
@Suite struct ConfigForReadingTests {
    @Test func aBadValueInAnUnrelatedDropInIsAProblemAndTheRestApplies() throws {
        try TemporaryDirectory.with { directory in
            let path = try directory.write("agent.conf", "[Agent]\nStateDirectory=/srv/rc\n")
            try directory.write(
                "agent.conf.d/50-typo.conf", "[Agent]\nMinimumFetchInterval=banana\nDefaults=/srv/defaults.json\n")
            #expect(throws: ConfigError.self) { try AgentConfig.load(explicitPath: path) }
            let (config, problems) = try AgentConfig.loadForReading(explicitPath: path)
            #expect(config.stateDirectory == "/srv/rc")
            #expect(config.defaults == "/srv/defaults.json", "the line after the bad one applies")
            #expect(config.minimumFetchInterval == AgentConfig().minimumFetchInterval)
            #expect(problems.map(\.location) == [SourceLocation(file: path + ".d/50-typo.conf", line: 2)])
            #expect(problems.first?.message.contains("'banana' is not a duration") == true)
        }
    }

    @Test func aBadValueOfANeededKeyFallsBackToItsBuiltInDefault() throws {
        try TemporaryDirectory.with { directory in
            let path = try directory.write("agent.conf", "[App]\nVersionScheme=debian\nVersion=1.0\n")
            try directory.write("agent.conf.d/60-bad.conf", "[App]\nVersionScheme=semver\n")
            let (config, problems) = try AgentConfig.loadForReading(explicitPath: path)
            #expect(config.versionScheme == .dotted, "the built-in default, not the earlier file's value")
            #expect(config.appVersion == "1.0")
            #expect(problems.count == 1)
        }
    }

    @Test func aLineThatIsNoAssignmentIsSkippedAndReadingGoesOn() throws {
        try TemporaryDirectory.with { directory in
            let path = try directory.write(
                "agent.conf",
                "[Agent]\nthis is not a setting\nStateDirectory=/srv/a\n[Broken\nStateDirectory=/srv/b\n[Agent\n"
                    + "Socket=/x\n[Agent]\nDefaults=/srv/d.json\n")
            #expect(throws: ConfigError.self) { try AgentConfig.load(explicitPath: path) }
            let (config, problems) = try AgentConfig.loadForReading(explicitPath: path)
            #expect(config.stateDirectory == "/srv/a", "what follows a malformed header belongs to no section")
            #expect(config.socket == AgentConfig().socket)
            #expect(config.defaults == "/srv/d.json")
            #expect(problems.map(\.location.line) == [2, 4, 6])
        }
    }

    @Test func checksAcrossKeysAreLeftToTheDaemon() throws {
        try TemporaryDirectory.with { directory in
            let path = try directory.write("agent.conf", "[Report]\nMQTTStatusTopic=status\n")
            #expect(throws: ConfigError.self) { try AgentConfig.load(explicitPath: path) }
            #expect(try AgentConfig.loadForReading(explicitPath: path).problems.isEmpty)
        }
    }

    @Test func unknownKeysAreNoProblemForAReaderButAreKeptForDoctor() throws {
        try TemporaryDirectory.with { directory in
            let path = try directory.write("agent.conf", "[Agent]\nStateDirectroy=/srv/rc\n")
            let (config, problems) = try AgentConfig.loadForReading(explicitPath: path)
            #expect(problems.isEmpty)
            #expect(config.warnings.count == 1)
        }
    }

    @Test func aMissingFileTheUserNamedIsStillAnError() throws {
        try TemporaryDirectory.with { directory in
            _ = #expect(throws: ConfigError.self) {
                try AgentConfig.loadForReading(explicitPath: directory.file("none"))
            }
        }
    }

    @Test func aFileThatIsNotUTF8IsAProblemAndTheOthersApply() throws {
        try TemporaryDirectory.with { directory in
            let path = try directory.write("agent.conf", "[Agent]\nStateDirectory=/srv/rc\n")
            try directory.write("agent.conf.d/90-late.conf", "[Agent]\nSocket=/srv/sock\n")
            let binary = try directory.write("agent.conf.d/10-binary.conf", bytes: [0x5B, 0xFF, 0x5D])
            let (config, problems) = try AgentConfig.loadForReading(explicitPath: path)
            #expect(config.stateDirectory == "/srv/rc" && config.socket == "/srv/sock")
            #expect(problems.map(\.location) == [SourceLocation(file: binary, line: 0)])
        }
    }
}
