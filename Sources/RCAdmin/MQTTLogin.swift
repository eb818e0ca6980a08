import RCCore
import RCMQTT

/// How rcadmin proves who it is to a broker: a CA to verify it, a client certificate and key, a
/// user name and password. One reading of these, from the command line (`notify-stale`,
/// `activity`, `set-update --notify`, `fleet status`) or from the relay's config (`[Push]`), and
/// one way into the MQTT client, so every command takes the same options the same way.
struct MQTTLogin: Sendable {
    /// What the options say, in RCMQTT's own type: the daemon fills the same one from `[Push]`.
    var credentials: MQTTCredentials

    static let options: [OptionSpec] = [
        .value("ca-file", "FILE"), .value("cert-file", "FILE"), .value("key-file", "FILE"),
        .value("username", "USER"), .value("password-file", "FILE"),
    ]

    /// The synopsis of ``options``.
    static let synopsis = "[--ca-file FILE] [--cert-file FILE --key-file FILE] [--username USER --password-file FILE]"

    init(_ credentials: MQTTCredentials) {
        self.credentials = credentials
    }

    /// The `[Push]` broker login of an agent.conf (the relay pings where the agents listen).
    init(pushOf config: AgentConfig) {
        self.init(
            MQTTCredentials(
                username: config.mqttUsername, passwordFile: config.mqttPasswordFile, caFile: config.mqttCAFile,
                certificateFile: config.mqttClientCertificate, keyFile: config.mqttClientKey))
    }

    /// Reads the options; pairs that only work together are refused apart, as an operator who
    /// gave one of them meant something by it.
    init(_ options: ParsedOptions) throws(AdminFailure) {
        self.init(
            MQTTCredentials(
                username: options.value("username"), passwordFile: options.value("password-file"),
                caFile: options.value("ca-file"), certificateFile: options.value("cert-file"),
                keyFile: options.value("key-file")))
        if credentials.passwordFile != nil && credentials.username == nil {
            throw .usage("--password-file goes with --username USER")
        }
        if (credentials.certificateFile == nil) != (credentials.keyFile == nil) {
            throw .usage("--cert-file and --key-file go together")
        }
    }

    /// Whether any option was given (they mean nothing without a broker).
    var isEmpty: Bool { credentials == MQTTCredentials() }

    /// The client options for a broker with (`tls`) or without TLS, through RCMQTT's
    /// ``MQTTCredentials`` (the daemon's reading of the password file). Read at every call: a
    /// rotated password is used without a restart of the relay.
    func clientOptions(tls: Bool) throws(MQTTPublisher.Failure) -> MQTTClient.Options {
        var options = MQTTClient.Options()  // no client id: a random one, with a clean session
        do { try credentials.apply(to: &options, tls: tls) } catch {
            throw MQTTPublisher.Failure(description: TextEscaping.terminal(error.description))
        }
        return options
    }
}
