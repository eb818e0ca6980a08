import Testing

@testable import RCCore

/// Settings compared as the daemon reads them (what a reload reports as changed), not as written.
@Suite struct ConfigValueTests {
    private func config(_ text: String) throws -> AgentConfig {
        var config = AgentConfig()
        try config.apply(text: text, file: "/etc/rcagent/agent.conf")
        return config
    }

    @Test func aDurationWrittenAnotherWayIsTheSameValue() throws {
        let seconds = try config("[Agent]\nMinimumFetchInterval=60s\n[Push]\nJitter=500ms\n")
        let minutes = try config("[Agent]\nMinimumFetchInterval=1min\n[Push]\nJitter=0.5s\n")
        // As text they differ; as values they do not.
        #expect(minutes.changedSettings(since: seconds) == ["Agent.MinimumFetchInterval", "Push.Jitter"])
        #expect(minutes.changedValues(since: seconds).isEmpty)
        #expect(
            minutes.settingValue("Agent.MinimumFetchInterval") == seconds.settingValue("Agent.MinimumFetchInterval"))
    }

    @Test func anotherValueAndAnotherSignalAreChanges() throws {
        let before = try config("[Agent]\nMinimumFetchInterval=60s\n[Signals]\nstore=berlin\n")
        let after = try config("[Agent]\nMinimumFetchInterval=2min\n[Signals]\nstore=hamburg\n")
        #expect(after.changedValues(since: before) == ["Agent.MinimumFetchInterval", "Signals.store"])
        #expect(after.settingValue("Signals.store") == "hamburg")
        // Text settings compare as written.
        let topic = try config("[Push]\nMQTTTopic=FLEET\n")
        #expect(topic.changedValues(since: try config("[Push]\nMQTTTopic=fleet\n")) == ["Push.MQTTTopic"])
    }
}
