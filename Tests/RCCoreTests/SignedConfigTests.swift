import RCCore
import Testing

/// `[Source] TrustedKeys=` and `SignatureThreshold=`: parsed, bounded, and refused with Firebase.
@Suite struct SignedConfigTests {
    static func config(_ text: String) throws(ConfigError) -> AgentConfig {
        var config = AgentConfig()
        try config.apply(text: text, file: "/etc/rcagent/agent.conf")
        return config
    }

    @Test func keysAndThresholdAreRead() throws {
        let config = try Self.config("[Source]\nTrustedKeys=/etc/rcagent/keys.d\nSignatureThreshold=2\n")
        #expect(config.trustedKeys == "/etc/rcagent/keys.d")
        #expect(config.signatureThreshold == 2)
        #expect(config.signedVersionPath == "/var/lib/rcagent/signed-version.json")
        #expect(try Self.config("[Source]\nSignatureThreshold=3\nSignatureThreshold=\n").signatureThreshold == 1)
        #expect(AgentConfig().trustedKeys == nil)
    }

    @Test func badValuesNameTheLine() {
        #expect(throws: ConfigError.self) { try Self.config("[Source]\nTrustedKeys=keys.pem\n") }
        for value in ["0", "33", "two", "-1"] {
            do {
                _ = try Self.config("[Source]\n\nSignatureThreshold=\(value)\n")
                Issue.record("SignatureThreshold=\(value) accepted")
            } catch {
                #expect(error.description.contains("agent.conf:3"), "\(error)")
                #expect(error.description.contains("SignatureThreshold= must be a number of keys from 1 to 32"))
            }
        }
    }

    @Test func trustedKeysIsForTheFileAndHTTPSources() throws {
        let firebase = try Self.config("[Source]\nType=firebase\nTrustedKeys=/k.pem\n")
        #expect(throws: ConfigError.self) { try firebase.validateTrustedKeys() }
        try Self.config("[Source]\nType=http\nTrustedKeys=/k.pem\n").validateTrustedKeys()
    }
}
