import RCCore
import RCSystem
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `AgentConfig`: built-in defaults, every key applied, resets, repeatable keys, value errors
/// with their location, warnings for unknown keys, and `validateSource()`.
@Suite struct AgentConfigTests {
    private func config(_ text: String, file: String = "/etc/rcagent/agent.conf") throws(ConfigError) -> AgentConfig {
        var config = AgentConfig()
        try config.apply(text: text, file: file)
        return config
    }

    private func signals(_ config: AgentConfig) -> [String] { config.signals.map { "\($0.name)=\($0.value)" } }

    @Test func builtInDefaultsMatchTheDocumentedConfig() {
        let config = AgentConfig()
        #expect(config.stateDirectory == "/var/lib/rcagent")
        #expect(config.databasePath == "/var/lib/rcagent/state.db")
        #expect(config.socket == "/run/rcagent/agent.sock")
        #expect(config.socketGroup == "rcagent")
        #expect(config.defaults == "/etc/rcagent/defaults.json")
        #expect(config.minimumFetchInterval == .seconds(43_200))
        #expect(config.fetchTimeout == .seconds(60))
        #expect(config.activation == .immediate)
        #expect(config.hooksDirectory == "/etc/rcagent/hooks.d")
        #expect(config.hookTimeout == .seconds(30))
        #expect(config.appVersion == nil)
        #expect(config.appPackage == nil)
        #expect(config.versionScheme == .dotted)
        #expect(config.requiredUpdateKey == "linux_required_update")
        #expect(config.recommendedUpdateKey == "linux_recommended_update")
        #expect(config.sourceType == .file)
        #expect(config.sourcePath == nil)
        #expect(config.sourceURL == nil)
        #expect(config.headers.isEmpty)
        #expect(config.realtime == .auto)
        #expect(config.mqtt == nil)
        #expect(config.mqttTopic == "PUSH_RC")
        #expect(config.jitter == .seconds(3))
        #expect(config.signals.isEmpty)
        #expect(config.files.isEmpty)
        #expect(config.warnings.isEmpty)
        #expect(AgentConfig.defaultPath == "/etc/rcagent/agent.conf")
    }

    @Test func everyKeyIsApplied() throws {
        let text = """
            [Agent]
            StateDirectory=/srv/rc/state
            Socket=/srv/rc/agent.sock
            SocketGroup=kiosk          # who may send commands
            Defaults=/srv/rc/defaults.json
            MinimumFetchInterval=1h 30min
            FetchTimeout=500ms
            Activation=on-start
            HooksDirectory=/srv/rc/hooks.d
            HookTimeout=2min

            [App]
            Version=1.2.3.4
            Package=kiosk-app
            VersionScheme=debian
            RequiredUpdateKey=req_key
            RecommendedUpdateKey=rec_key

            [Source]
            Type=http
            Path=/srv/rc/remote.json
            URL=https://config.example/rc.json
            Header=Authorization: Bearer abc
            Header=X-Device: 7
            CAFile=/srv/rc/ca.pem
            ClientCertificate=/srv/rc/client.pem
            ClientKey=/srv/rc/client.key
            ProjectId=my-project
            AppId=1:123:web:abc
            APIKey=AIza123
            Endpoint=http://127.0.0.1:8080

            [Push]
            Realtime=no
            MQTT=mqtts://broker.example:8883
            MQTTTopic=FLEET
            MQTTUsername=device
            MQTTPasswordFile=/srv/rc/mqtt.pass
            MQTTCAFile=/srv/rc/mqtt-ca.pem
            Jitter=0

            [Signals]
            store=berlin-12
            tier=gold
            """
        let config = try config(text)
        #expect(config.stateDirectory == "/srv/rc/state")
        #expect(config.databasePath == "/srv/rc/state/state.db")
        #expect(config.socket == "/srv/rc/agent.sock")
        #expect(config.socketGroup == "kiosk")
        #expect(config.defaults == "/srv/rc/defaults.json")
        #expect(config.minimumFetchInterval == .seconds(5_400))
        #expect(config.fetchTimeout == .milliseconds(500))
        #expect(config.activation == .onStart)
        #expect(config.hooksDirectory == "/srv/rc/hooks.d")
        #expect(config.hookTimeout == .seconds(120))
        #expect(config.appVersion == "1.2.3.4")
        #expect(config.appPackage == "kiosk-app")
        #expect(config.versionScheme == .debian)
        #expect(config.requiredUpdateKey == "req_key")
        #expect(config.recommendedUpdateKey == "rec_key")
        #expect(config.sourceType == .http)
        #expect(config.sourcePath == "/srv/rc/remote.json")
        #expect(config.sourceURL == "https://config.example/rc.json")
        #expect(config.headers == ["Authorization: Bearer abc", "X-Device: 7"])
        #expect(config.caFile == "/srv/rc/ca.pem")
        #expect(config.clientCertificate == "/srv/rc/client.pem")
        #expect(config.clientKey == "/srv/rc/client.key")
        #expect(config.projectId == "my-project")
        #expect(config.appId == "1:123:web:abc")
        #expect(config.apiKey == "AIza123")
        #expect(config.endpoint == "http://127.0.0.1:8080")
        #expect(config.realtime == .no)
        #expect(config.mqtt == "mqtts://broker.example:8883")
        #expect(config.mqttTopic == "FLEET")
        #expect(config.mqttUsername == "device")
        #expect(config.mqttPasswordFile == "/srv/rc/mqtt.pass")
        #expect(config.mqttCAFile == "/srv/rc/mqtt-ca.pem")
        #expect(config.jitter == .zero)
        #expect(signals(config) == ["store=berlin-12", "tier=gold"])
        #expect(config.warnings.isEmpty)
        #expect(config.files == ["/etc/rcagent/agent.conf"])
        #expect(config.locations["Agent.FetchTimeout"] == SourceLocation(file: "/etc/rcagent/agent.conf", line: 7))
        #expect(config.locations["Source.URL"] == SourceLocation(file: "/etc/rcagent/agent.conf", line: 22))
        #expect(config.locations["Push.Jitter"] == SourceLocation(file: "/etc/rcagent/agent.conf", line: 40))
    }

    @Test(arguments: ActivationPolicy.allCases)
    func everyActivationPolicyIsAccepted(_ policy: ActivationPolicy) throws {
        #expect(try config("[Agent]\nActivation=\(policy.rawValue)").activation == policy)
    }

    @Test(arguments: RealtimeMode.allCases)
    func everyRealtimeModeIsAccepted(_ mode: RealtimeMode) throws {
        #expect(try config("[Push]\nRealtime=\(mode.rawValue)").realtime == mode)
    }

    @Test func laterAssignmentWins() throws {
        let config = try config("[Agent]\nFetchTimeout=5s\n[Push]\nJitter=1s\n[Agent]\nFetchTimeout=7s\n")
        #expect(config.fetchTimeout == .seconds(7))
        #expect(config.jitter == .seconds(1))
        #expect(config.locations["Agent.FetchTimeout"] == SourceLocation(file: "/etc/rcagent/agent.conf", line: 6))
    }

    @Test func emptyValueResetsToTheBuiltInDefault() throws {
        let config = try config(
            """
            [Agent]
            StateDirectory=/x
            StateDirectory=
            SocketGroup=kiosk
            SocketGroup=
            FetchTimeout=5s
            FetchTimeout=
            Activation=manual
            Activation=
            [App]
            Version=1.0
            Version=
            RequiredUpdateKey=custom
            RequiredUpdateKey=
            [Source]
            Path=/a.json
            Path=
            [Push]
            MQTT=mqtt://h:1883
            MQTT=
            Jitter=10s
            Jitter=
            """)
        #expect(config.stateDirectory == "/var/lib/rcagent")
        #expect(config.socketGroup == nil, "an empty SocketGroup= means no group, not the default")
        #expect(config.fetchTimeout == .seconds(60))
        #expect(config.activation == .immediate)
        #expect(config.appVersion == nil)
        #expect(config.requiredUpdateKey == "linux_required_update")
        #expect(config.sourcePath == nil)
        #expect(config.mqtt == nil)
        #expect(config.jitter == .seconds(3))
    }

    @Test func headerIsRepeatableAndAnEmptyValueClearsTheList() throws {
        let config = try config(
            """
            [Source]
            Header=A: 1
            Header=B: two words
            Header=
            Header=C: 3
            Header=D:
            """)
        #expect(config.headers == ["C: 3", "D:"])
    }

    @Test func signalsAreNameValuePairsInOrderAndAReassignmentReplaces() throws {
        let config = try config(
            """
            [Signals]
            store=berlin-12
            tier=gold
            region=eu   # inline comment
            store=hamburg-3
            region=
            """)
        #expect(signals(config) == ["tier=gold", "store=hamburg-3"])
        #expect(config.warnings.isEmpty)
    }

    @Test func signalsOverFirebasesLimitsAreRefusedWithTheirLine() throws {
        let longName = String(repeating: "k", count: 251)
        #expect(
            throws: ConfigError(
                SourceLocation(file: "/etc/rcagent/agent.conf", line: 3),
                "custom signal name is 251 characters long; Firebase allows at most 250")
        ) { try config("[Signals]\nstore=berlin\n\(longName)=x") }
        #expect(
            throws: ConfigError(
                SourceLocation(file: "/etc/rcagent/agent.conf", line: 2),
                "custom signal 'store' has a value 501 characters long; Firebase allows at most 500")
        ) { try config("[Signals]\nstore=\(String(repeating: "v", count: 501))") }
        // At the limits exactly: accepted.
        let atLimits = try config(
            "[Signals]\n\(String(repeating: "k", count: 250))=\(String(repeating: "v", count: 500))")
        #expect(atLimits.signals.count == 1)
    }

    @Test func moreThanAHundredSignalsAreRefusedOnceEveryFileIsApplied() throws {
        try TemporaryDirectory.with { (dir) throws in
            let lines = (1...101).map { "s\($0)=v" }.joined(separator: "\n")
            let main = try dir.write("agent.conf", "[Signals]\n\(lines)\n")
            #expect(
                throws: ConfigError(
                    SourceLocation(file: main, line: 102),
                    "[Signals] sets 101 custom signals; Firebase allows at most 100")
            ) { try AgentConfig.load(explicitPath: main) }
            // A drop-in that removes one brings the set back within the limit.
            try dir.write("agent.conf.d/10-fewer.conf", "[Signals]\ns1=\n")
            let config = try AgentConfig.load(explicitPath: main)
            #expect(config.signals.count == 100)
        }
    }

    @Test func unknownKeysAndSectionsAreWarningsWithLocations() throws {
        let config = try config(
            """
            [Agent]
            Socket=/run/a.sock
            FutureKey=1
            statedirectory=/lower/case
            [Future]
            Thing=2
            [Push]
            Jitter=2s
            """, file: "/etc/rcagent/agent.conf.d/10-new.conf")
        let file = "/etc/rcagent/agent.conf.d/10-new.conf"
        #expect(
            config.warnings == [
                ConfigError(SourceLocation(file: file, line: 3), "unknown key 'FutureKey' in [Agent], ignoring"),
                ConfigError(
                    SourceLocation(file: file, line: 4),
                    "unknown key 'statedirectory' in [Agent], ignoring (did you mean 'StateDirectory'?)"),
                ConfigError(SourceLocation(file: file, line: 6), "unknown section [Future], ignoring 'Thing='"),
            ])
        // The known keys around them still apply, and unknown keys change nothing.
        #expect(config.socket == "/run/a.sock")
        #expect(config.jitter == .seconds(2))
        #expect(config.stateDirectory == "/var/lib/rcagent")
        #expect(config.locations["Agent.FutureKey"] == nil)
    }

    struct ValueErrorCase: Sendable, CustomTestStringConvertible {
        let section: String
        let assignment: String
        let message: String
        var testDescription: String { "[\(section)] \(assignment)" }
    }

    @Test(arguments: [
        ValueErrorCase(
            section: "Agent", assignment: "MinimumFetchInterval=soon",
            message: "MinimumFetchInterval= 'soon' is not a duration (e.g. 500ms, 30s, 5min, 12h, 1d)"),
        ValueErrorCase(
            section: "Agent", assignment: "FetchTimeout=5m",
            message: "FetchTimeout= '5m' is not a duration (e.g. 500ms, 30s, 5min, 12h, 1d)"),
        ValueErrorCase(
            section: "Push", assignment: "Jitter=-1s",
            message: "Jitter= '-1s' is not a duration (e.g. 500ms, 30s, 5min, 12h, 1d)"),
        ValueErrorCase(section: "Agent", assignment: "FetchTimeout=0", message: "FetchTimeout= must be greater than 0"),
        ValueErrorCase(
            section: "Agent", assignment: "FetchTimeout=0ms", message: "FetchTimeout= must be greater than 0"),
        ValueErrorCase(section: "Agent", assignment: "HookTimeout=0s", message: "HookTimeout= must be greater than 0"),
        ValueErrorCase(
            section: "Agent", assignment: "Activation=later",
            message: "Activation= 'later' is not one of: immediate, on-start, manual"),
        ValueErrorCase(
            section: "Agent", assignment: "Activation=Manual",
            message: "Activation= 'Manual' is not one of: immediate, on-start, manual"),
        ValueErrorCase(
            section: "Source", assignment: "Type=ftp", message: "Type= 'ftp' is not one of: file, http, firebase"),
        ValueErrorCase(
            section: "App", assignment: "VersionScheme=semver",
            message: "VersionScheme= 'semver' is not one of: dotted, debian"),
        ValueErrorCase(
            section: "Push", assignment: "Realtime=maybe", message: "Realtime= 'maybe' is not one of: auto, yes, no"),
        ValueErrorCase(
            section: "Agent", assignment: "StateDirectory=var/lib/rcagent",
            message: "StateDirectory= must be an absolute path, got 'var/lib/rcagent'"),
        ValueErrorCase(
            section: "Agent", assignment: "Defaults=./defaults.json",
            message: "Defaults= must be an absolute path, got './defaults.json'"),
        ValueErrorCase(
            section: "Source", assignment: "Path=remote.json",
            message: "Path= must be an absolute path, got 'remote.json'"),
        ValueErrorCase(
            section: "Push", assignment: "MQTTCAFile=~/ca.pem",
            message: "MQTTCAFile= must be an absolute path, got '~/ca.pem'"),
        ValueErrorCase(
            section: "Report", assignment: "MetricsFile=rcagent.prom",
            message: "MetricsFile= must be an absolute path, got 'rcagent.prom'"),
        ValueErrorCase(
            section: "Report", assignment: "MetricsFile=/var/lib/rcagent/",
            message: "MetricsFile= must name a file, not a directory, got '/var/lib/rcagent/'"),
        ValueErrorCase(
            section: "Report", assignment: "MetricsFile=/var/lib/rcagent/..",
            message: "MetricsFile= must name a file, not a directory, got '/var/lib/rcagent/..'"),
        ValueErrorCase(
            section: "Report", assignment: "MetricsFile=/var/lib/rcagent/state.db",
            message:
                "MetricsFile= must name a file ending in .prom (node_exporter reads only those), got '/var/lib/rcagent/state.db'"
        ),
        ValueErrorCase(
            section: "Report", assignment: "MetricsFile=/var/lib/rcagent/.prom",
            message:
                "MetricsFile= must name a file ending in .prom (node_exporter reads only those), got '/var/lib/rcagent/.prom'"
        ),
        ValueErrorCase(
            section: "Source", assignment: "Header=NoColon", message: "Header= must be 'Name: value', got 'NoColon'"),
        ValueErrorCase(
            section: "Source", assignment: "Header= : value", message: "Header= must be 'Name: value', got ': value'"),
        ValueErrorCase(
            section: "Push", assignment: "MQTT=http://broker:1883",
            message: "MQTT= must be an mqtt://host[:port] or mqtts://host[:port] URL, got 'http://broker:1883'"),
        ValueErrorCase(
            section: "Push", assignment: "MQTT=broker:1883",
            message: "MQTT= must be an mqtt://host[:port] or mqtts://host[:port] URL, got 'broker:1883'"),
        ValueErrorCase(
            section: "Push", assignment: "MQTT=mqtt://",
            message: "MQTT= must be an mqtt://host[:port] or mqtts://host[:port] URL, got 'mqtt://'"),
        ValueErrorCase(
            section: "Push", assignment: "MQTT=mqtt://a:1883 ftp://b",
            message: "MQTT= must be an mqtt://host[:port] or mqtts://host[:port] URL, got 'ftp://b'"),
        ValueErrorCase(
            section: "Report", assignment: "MQTT=mqtt://a mqtt://b:0",
            message: "MQTT= must be an mqtt://host[:port] or mqtts://host[:port] URL, got 'mqtt://b:0'"),
        ValueErrorCase(
            section: "Push", assignment: "MQTT=mqtt://a mqtts://b",
            message: "MQTT= mixes mqtt:// and mqtts:// URLs; a list is all one or all the other"),
        ValueErrorCase(
            section: "Report", assignment: "MQTTStatusTopic=rcagent/+",
            message: "MQTTStatusTopic= must not hold the wildcards + or #, got 'rcagent/+'"),
        ValueErrorCase(
            section: "Report", assignment: "MQTTStatusTopic=rcagent/#",
            message: "MQTTStatusTopic= must not hold the wildcards + or #, got 'rcagent/#'"),
        ValueErrorCase(
            section: "Report", assignment: "MQTTStatusTopic=$SYS/status",
            message: "MQTTStatusTopic= must not start with $ (the broker's own topics), got '$SYS/status'"),
        ValueErrorCase(
            section: "Report", assignment: "MQTTStatusTopic=rcagent/status/",
            message: "MQTTStatusTopic= must not end with /, got 'rcagent/status/'"),
        ValueErrorCase(
            section: "Report", assignment: "MQTTStatusTopic=" + String(repeating: "t", count: 513),
            message: "MQTTStatusTopic= is longer than 512 bytes, got '\(String(repeating: "t", count: 513))'"),
        ValueErrorCase(
            section: "Report", assignment: "MQTTCAFile=ca.pem",
            message: "MQTTCAFile= must be an absolute path, got 'ca.pem'"),
    ])
    func badValueIsAnErrorAtItsLine(_ example: ValueErrorCase) {
        let text = "# agent config\n[\(example.section)]\n\n\(example.assignment)   # why\n"
        #expect(throws: ConfigError(SourceLocation(file: "/etc/rcagent/agent.conf", line: 4), example.message)) {
            try config(text)
        }
    }

    @Test func brokerListsAndTheReport() throws {
        let text = """
            [Push]
            MQTT=mqtt://n1:1883  mqtt://n2:1884\tmqtt://n3
            [Report]
            MQTTStatusTopic=rcagent/status
            """
        let shared = try config(text)
        #expect(shared.mqttBrokers == ["mqtt://n1:1883", "mqtt://n2:1884", "mqtt://n3"])
        #expect(shared.mqtt == "mqtt://n1:1883")
        #expect(shared.reportTopic == "rcagent/status")
        #expect(shared.reportBrokers == shared.mqttBrokers)
        #expect(shared.reportSharesPushConnection)
        let own = try config(text + "\nMQTT=mqtt://reports:1883\nMQTTUsername=dev\n")
        #expect(own.reportBrokers == ["mqtt://reports:1883"])
        #expect(!own.reportSharesPushConnection)
        #expect(own.reportUsername == "dev")
        // Set back to empty: the push brokers again.
        let reset = try config(text + "\nMQTT=mqtt://reports:1883\nMQTT=\n")
        #expect(reset.reportSharesPushConnection)
        #expect(!AgentConfig().reportSharesPushConnection)
    }

    @Test func aReportTopicWithoutABrokerIsAnErrorAtItsLine() throws {
        try TemporaryDirectory.with { (dir) throws in
            let main = try dir.write("agent.conf", "[Report]\n\nMQTTStatusTopic=rcagent/status\n")
            #expect(
                throws: ConfigError(
                    SourceLocation(file: main, line: 3),
                    "[Report] MQTTStatusTopic= needs a broker: set [Report] MQTT= or [Push] MQTT=")
            ) {
                try AgentConfig.load(explicitPath: main, environment: [:])
            }
            // A drop-in may bring the broker.
            try dir.write("agent.conf.d/b.conf", "[Push]\nMQTT=mqtt://b\n")
            #expect(try AgentConfig.load(explicitPath: main, environment: [:]).reportSharesPushConnection)
        }
    }

    @Test func anMQTTClientCertificateComesWithItsKeyAndOnlyOverTLS() throws {
        try TemporaryDirectory.with { (dir) throws in
            func load(_ text: String) throws -> AgentConfig {
                try AgentConfig.load(explicitPath: try dir.write("agent.conf", text), environment: [:])
            }
            let pair = "MQTTClientCertificate=/etc/rcagent/device.pem\nMQTTClientKey=/etc/rcagent/device.key\n"
            let good = try load("[Push]\nMQTT=mqtts://a mqtts://b\n" + pair)
            #expect(good.mqttClientCertificate == "/etc/rcagent/device.pem")
            #expect(good.mqttClientKey == "/etc/rcagent/device.key")
            let path = dir.file("agent.conf")
            #expect(
                throws: ConfigError(
                    SourceLocation(file: path, line: 3), "[Push] MQTTClientCertificate= needs MQTTClientKey= too")
            ) { try load("[Push]\nMQTT=mqtts://a\nMQTTClientCertificate=/c.pem\n") }
            #expect(
                throws: ConfigError(
                    SourceLocation(file: path, line: 3), "[Report] MQTTClientKey= needs MQTTClientCertificate= too")
            ) { try load("[Report]\nMQTTStatusTopic=s\nMQTTClientKey=/k.pem\nMQTT=mqtts://r\n") }
            #expect(
                throws: ConfigError(
                    SourceLocation(file: path, line: 3),
                    "[Push] MQTTClientCertificate= needs mqtts:// brokers, got 'mqtt://a'")
            ) { try load("[Push]\nMQTT=mqtt://a\n" + pair) }
            // The report's own broker is checked against its own pair.
            #expect(
                throws: ConfigError(
                    SourceLocation(file: path, line: 4),
                    "[Report] MQTTClientCertificate= needs mqtts:// brokers, got 'mqtt://r'")
            ) { try load("[Report]\nMQTTStatusTopic=s\nMQTT=mqtt://r\n" + pair) }
        }
    }

    @Test func zeroIsAllowedWhereItMeansNoDelay() throws {
        let config = try config("[Agent]\nMinimumFetchInterval=0\n[Push]\nJitter=0s\n")
        #expect(config.minimumFetchInterval == .zero)
        #expect(config.jitter == .zero)
    }

    // MARK: - validateSource

    @Test func fileSourceWithoutPathIsValidButUnconfigured() throws {
        // The packaged agent.conf sets nothing: the daemon must start and serve the defaults.
        try config("[Agent]\n[Source]\nType=file\n", file: "/a.conf").validateSource()
        try AgentConfig().validateSource()
        #expect(AgentConfig().sourcePath == nil)
    }

    @Test func httpSourceNeedsAnHTTPURL() throws {
        #expect(throws: ConfigError(SourceLocation(file: "/a.conf", line: 2), "[Source] Type=http needs URL=")) {
            try config("[Source]\nType=http\n", file: "/a.conf").validateSource()
        }
        #expect(
            throws: ConfigError(
                SourceLocation(file: "/a.conf", line: 3),
                "URL= must start with http:// or https://, got 'ftp://host/rc.json'")
        ) {
            try config("[Source]\nType=http\nURL=ftp://host/rc.json\n", file: "/a.conf").validateSource()
        }
        try config("[Source]\nType=http\nURL=http://127.0.0.1:8080/rc.json\n", file: "/a.conf").validateSource()
        try config("[Source]\nType=http\nURL=https://rc.example/rc.json\n", file: "/a.conf").validateSource()
    }

    @Test func firebaseSourceNeedsProjectAppAndKey() throws {
        #expect(
            throws: ConfigError(SourceLocation(file: "/a.conf", line: 2), "[Source] Type=firebase needs ProjectId=")
        ) {
            try config("[Source]\nType=firebase\nAppId=1:2:web:3\nAPIKey=k\n", file: "/a.conf").validateSource()
        }
        #expect(throws: ConfigError(SourceLocation(file: "/a.conf", line: 2), "[Source] Type=firebase needs AppId=")) {
            try config("[Source]\nType=firebase\nProjectId=p\nAPIKey=k\n", file: "/a.conf").validateSource()
        }
        #expect(throws: ConfigError(SourceLocation(file: "/a.conf", line: 2), "[Source] Type=firebase needs APIKey=")) {
            try config("[Source]\nType=firebase\nProjectId=p\nAppId=1:2:web:3\n", file: "/a.conf").validateSource()
        }
        try config("[Source]\nType=firebase\nProjectId=p\nAppId=1:2:web:3\nAPIKey=k\n", file: "/a.conf")
            .validateSource()
    }

    @Test func validateSourceNamesTheDropInThatSetTheKey() throws {
        var config = AgentConfig()
        try config.apply(text: "[Source]\nType=http\n", file: "/etc/rcagent/agent.conf")
        try config.apply(text: "# override\n[Source]\nURL=gopher://x\n", file: "/etc/rcagent/agent.conf.d/50-url.conf")
        #expect(
            throws: ConfigError(
                SourceLocation(file: "/etc/rcagent/agent.conf.d/50-url.conf", line: 3),
                "URL= must start with http:// or https://, got 'gopher://x'")
        ) {
            try config.validateSource()
        }
    }

    // MARK: - load(explicitPath:environment:)

    @Test func explicitPathIsLoadedWithItsDropInsInLexicalOrder() throws {
        try TemporaryDirectory.with { (dir) throws in
            let main = try dir.write(
                "agent.conf", "[Agent]\nFetchTimeout=10s\nActivation=manual\n[Push]\nJitter=1s\nMQTTTopic=MAIN\n")
            let a = try dir.write("agent.conf.d/10-a.conf", "[Agent]\nFetchTimeout=20s\n[Push]\nJitter=2s\n")
            let b = try dir.write("agent.conf.d/20-b.conf", "[Agent]\nFetchTimeout=30s\n")
            // Lexical, not numeric: "9-..." sorts after "20-...".
            let c = try dir.write("agent.conf.d/9-late.conf", "[Push]\nMQTTTopic=LATE\n")
            try dir.write("agent.conf.d/30-ignored.txt", "[Agent]\nFetchTimeout=99s\n")
            try dir.write("agent.conf.d/.hidden.conf", "[Agent]\nFetchTimeout=98s\n")
            try dir.write("agent.conf.d/99-broken.conf~", "this is not INI\n")

            let config = try AgentConfig.load(explicitPath: main, environment: [:])
            #expect(config.files == [main, a, b, c])
            #expect(config.fetchTimeout == .seconds(30))
            #expect(config.jitter == .seconds(2))
            #expect(config.activation == .manual)
            #expect(config.mqttTopic == "LATE")
            #expect(config.locations["Agent.FetchTimeout"] == SourceLocation(file: b, line: 2))
        }
    }

    @Test func dropInCanResetAMainFileValueToItsDefault() throws {
        try TemporaryDirectory.with { (dir) throws in
            let main = try dir.write("agent.conf", "[Source]\nHeader=A: 1\nHeader=B: 2\n[Agent]\nHookTimeout=5s\n")
            try dir.write("agent.conf.d/override.conf", "[Source]\nHeader=\nHeader=C: 3\n[Agent]\nHookTimeout=\n")
            let config = try AgentConfig.load(explicitPath: main)
            #expect(config.headers == ["C: 3"])
            #expect(config.hookTimeout == .seconds(30))
        }
    }

    @Test func environmentNamesTheFileWhenNoExplicitPathIsGiven() throws {
        try TemporaryDirectory.with { (dir) throws in
            let fromEnvironment = try dir.write("env.conf", "[Agent]\nSocket=/run/from-env.sock\n")
            let explicit = try dir.write("explicit.conf", "[Agent]\nSocket=/run/explicit.sock\n")
            let environment = ["RCAGENT_CONFIG": fromEnvironment, "OTHER": "x"]

            let viaEnvironment = try AgentConfig.load(explicitPath: nil, environment: environment)
            #expect(viaEnvironment.socket == "/run/from-env.sock")
            #expect(viaEnvironment.files == [fromEnvironment])

            let viaFlag = try AgentConfig.load(explicitPath: explicit, environment: environment)
            #expect(viaFlag.socket == "/run/explicit.sock")
            #expect(viaFlag.files == [explicit])
        }
    }

    @Test func missingExplicitFileIsAnError() throws {
        try TemporaryDirectory.with { (dir) throws in
            let missing = dir.file("nope.conf")
            #expect(throws: ConfigError(SourceLocation(file: missing, line: 0), "config file not found")) {
                try AgentConfig.load(explicitPath: missing, environment: [:])
            }
            #expect(throws: ConfigError(SourceLocation(file: missing, line: 0), "config file not found")) {
                try AgentConfig.load(explicitPath: nil, environment: ["RCAGENT_CONFIG": missing])
            }
        }
    }

    @Test(.enabled(if: !pathExists(AgentConfig.defaultPath), "this machine has a real /etc/rcagent/agent.conf"))
    func missingDefaultFileMeansBuiltInDefaults() throws {
        for environment in [[:], ["RCAGENT_CONFIG": ""]] {
            let config = try AgentConfig.load(explicitPath: nil, environment: environment)
            #expect(config.files.isEmpty)
            #expect(config.socket == "/run/rcagent/agent.sock")
            #expect(config.fetchTimeout == .seconds(60))
        }
    }

    @Test func dropInsApplyWhenTheDefaultFileIsMissing() throws {
        try TemporaryDirectory.with { (dir) throws in
            let dropIn = try dir.write("agent.conf.d/10-site.conf", "[Agent]\nFetchTimeout=20s\n")
            let config = try AgentConfig.load(environment: [:], defaultPath: dir.path + "/agent.conf")
            #expect(config.fetchTimeout == .seconds(20))
            #expect(config.files == [dropIn])
        }
    }

    @Test func errorInADropInNamesTheDropIn() throws {
        try TemporaryDirectory.with { (dir) throws in
            let main = try dir.write("agent.conf", "[Agent]\nFetchTimeout=10s\n")
            try dir.write("agent.conf.d/10-ok.conf", "[Agent]\nFetchTimeout=20s\n")
            let bad = try dir.write("agent.conf.d/20-bad.conf", "[Agent]\n# explain\nActivation=sometimes\n")
            #expect(
                throws: ConfigError(
                    SourceLocation(file: bad, line: 3),
                    "Activation= 'sometimes' is not one of: immediate, on-start, manual")
            ) {
                try AgentConfig.load(explicitPath: main)
            }
        }
    }

    @Test func warningsFromEveryFileAreKept() throws {
        try TemporaryDirectory.with { (dir) throws in
            let main = try dir.write("agent.conf", "[Agent]\nOld=1\n")
            let dropIn = try dir.write("agent.conf.d/a.conf", "[New]\nKey=1\n")
            let config = try AgentConfig.load(explicitPath: main)
            #expect(
                config.warnings == [
                    ConfigError(SourceLocation(file: main, line: 2), "unknown key 'Old' in [Agent], ignoring"),
                    ConfigError(SourceLocation(file: dropIn, line: 2), "unknown section [New], ignoring 'Key='"),
                ])
        }
    }

    @Test func invalidUTF8IsAnError() throws {
        try TemporaryDirectory.with { (dir) throws in
            let path = try dir.write("agent.conf", bytes: Array("[Agent]\nSocket=/run/".utf8) + [0xff, 0xfe, 0x0a])
            #expect(throws: ConfigError(SourceLocation(file: path, line: 0), "not valid UTF-8")) {
                try AgentConfig.load(explicitPath: path)
            }
        }
    }

    /// What a reload reports and the digest `status` carries: settings as the files wrote them.
    @Test func changedSettingsAndTheDigestFollowWhatTheFilesSay() throws {
        let base = try config("[Agent]\nMinimumFetchInterval=1h\n[Source]\nHeader=A: 1\n[Signals]\nstore=berlin")
        let same = try config("[Signals]\nstore=berlin\n[Source]\nHeader=A: 1\n[Agent]\nMinimumFetchInterval=1h")
        #expect(same.changedSettings(since: base).isEmpty)
        #expect(same.digest == base.digest, "the order of the lines does not matter")

        let other = try config(
            "[Agent]\nMinimumFetchInterval=\nSocket=/run/x.sock\n[Source]\nHeader=A: 1\nHeader=B: 2\n[Signals]\ntier=gold"
        )
        #expect(
            other.changedSettings(since: base) == [
                "Agent.Socket", "Agent.MinimumFetchInterval", "Source.Header", "Signals.store", "Signals.tier",
            ])
        #expect(other.digest != base.digest)
        // A key set back to empty is its built-in default: the same as never set.
        #expect(
            try config("[Agent]\nMinimumFetchInterval=1h\nMinimumFetchInterval=").changedSettings(since: AgentConfig())
                .isEmpty)
    }

    /// A misspelt section or key says what it probably meant, and every problem of a load comes
    /// at once: the `Url=` typo is shown beside the "needs URL=" error it causes.
    @Test func typosAreNamedAndEveryProblemComesAtOnce() throws {
        try TemporaryDirectory.with { directory in
            let path = try directory.write(
                "agent.conf", "[source]\nPath=/x\n[Source]\nType=http\nUrl=http://h/c.json\n[Agent]\nJitter=2s\n")
            try directory.write("agent.conf.d/10-a.conf", "[Agent]\nMinimumFetchInterval=soon\nHookTimeout=0\n")
            #expect {
                try AgentConfig.load(explicitPath: path)
            } throws: { error in
                let text = (error as? ConfigError)?.description ?? ""
                return text.contains("10-a.conf:2: MinimumFetchInterval= 'soon' is not a duration")
                    && text.contains("10-a.conf:3: HookTimeout= must be greater than 0")
                    && text.contains(
                        "agent.conf:2: unknown section [source], ignoring 'Path=' (did you mean [Source]?)")
                    && text.contains("agent.conf:5: unknown key 'Url' in [Source], ignoring (did you mean 'URL'?)")
                    && text.contains("agent.conf:7: unknown key 'Jitter' in [Agent], ignoring")
            }
            try directory.write("agent.conf.d/10-a.conf", "")
            let config = try AgentConfig.load(explicitPath: path)
            #expect {
                try config.validateSource()
            } throws: { error in
                let text = (error as? ConfigError)?.description ?? ""
                return text.hasPrefix("\(path):4: [Source] Type=http needs URL=")
                    && text.contains("unknown key 'Url' in [Source], ignoring (did you mean 'URL'?)")
            }
        }
    }
}
