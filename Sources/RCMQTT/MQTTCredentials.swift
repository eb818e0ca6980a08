/// Who a client is to a broker: a user name with its password file, the CA to verify the broker
/// with, a client certificate and its key. The daemon fills it from `[Push]`/`[Report]`, rcadmin
/// from its options or the relay's config; ``apply(to:tls:)`` is the one way into the client's
/// options, so both read the password file the same strict way (``MQTTPassword``).
public struct MQTTCredentials: Sendable, Equatable {
    public var username: String?
    /// Read only with a ``username`` (a password alone means nothing to MQTT).
    public var passwordFile: String?
    /// TLS only: the one CA trusted, or the system's without one.
    public var caFile: String?
    /// TLS only: the client's certificate and its unencrypted key, both or neither.
    public var certificateFile: String?
    public var keyFile: String?

    public init(
        username: String? = nil, passwordFile: String? = nil, caFile: String? = nil, certificateFile: String? = nil,
        keyFile: String? = nil
    ) {
        self.username = username
        self.passwordFile = passwordFile
        self.caFile = caFile
        self.certificateFile = certificateFile
        self.keyFile = keyFile
    }

    /// The message of the error for a client certificate on a broker without TLS.
    public static let certificateNeedsTLS = "a client certificate needs an mqtts:// broker"

    /// Sets the login and TLS on `options` for a broker with (`tls`) or without TLS, reading the
    /// password file now: a rotated password is used by the next setup without a restart.
    /// Throws ``MQTTError/Kind/setup`` for an unreadable password file (its reason says why) and
    /// ``MQTTError/Kind/tls`` for a client certificate without TLS.
    public func apply(to options: inout MQTTClient.Options, tls: Bool) throws(MQTTError) {
        if !tls, certificateFile != nil { throw MQTTError(.tls, Self.certificateNeedsTLS) }
        options.username = username
        if username != nil, let passwordFile { options.password = try MQTTPassword.read(fromFile: passwordFile) }
        options.tls = tls
        options.caFile = caFile
        options.certificateFile = certificateFile
        options.keyFile = keyFile
    }
}
