import RCCore
import Testing

/// `TrustedKeys=` and `SignatureThreshold=` (in `[Source]` or `[Push]`): parsed, bounded, and refused with Firebase.
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

    @Test func theKeysAreTakenInPushToo() throws {
        let push = try Self.config("[Push]\nTrustedKeys=/etc/rcagent/keys.d\nSignatureThreshold=2\n")
        #expect(push.trustedKeys == "/etc/rcagent/keys.d" && push.signatureThreshold == 2)
        // One setting under either name: the later line wins, whichever section it is in, and
        // it is recorded (for reload and errors) under the [Source] name.
        let both = try Self.config(
            "[Source]\nTrustedKeys=/a.pem\nSignatureThreshold=3\n[Push]\nTrustedKeys=/b.pem\n[Source]\nSignatureThreshold=\n"
        )
        #expect(both.trustedKeys == "/b.pem" && both.signatureThreshold == 1)
        #expect(both.settingValue("Source.TrustedKeys") == "/b.pem")
        #expect(both.locations["Source.TrustedKeys"]?.line == 5)
        #expect(try Self.config("[Push]\nTrustedKeys=/b.pem\n[Source]\nTrustedKeys=\n").trustedKeys == nil)
        // A bad value names its line in [Push] as in [Source]; the Firebase check finds the line.
        #expect(throws: ConfigError.self) { try Self.config("[Push]\nSignatureThreshold=0\n") }
        let firebase = try Self.config("[Source]\nType=firebase\n[Push]\nTrustedKeys=/k.pem\n")
        #expect(throws: ConfigError.self) { try firebase.validateTrustedKeys() }
    }
}
