/// `[Activation]`: when and how a fetched snapshot becomes the active one (safe activation):
/// maintenance windows, the health check that makes each activation a trial, the hold limit and
/// how many activated snapshots history keeps.
public struct ActivationSettings: Sendable, Equatable {
    /// `Window=` (repeatable; empty clears): no window means any time.
    public var windows = WindowSchedule()
    /// `HealthCheck=`: an executable run after every activation; `nil`: activations are not trials.
    public var healthCheck: String?
    /// `HealthTimeout=`: no verdict by then is a failed check.
    public var healthTimeout: Duration = .seconds(60)
    /// `HoldLimit=`: a hold older than this no longer defers activations.
    public var holdLimit: Duration = .seconds(3600)
    /// `History=`: activated snapshots kept for `history` and `rollback`.
    public var history = 20

    public init() {}

    /// The most snapshots `History=` keeps: each holds its document's values (stored once, shared
    /// with the fetched snapshot they came from).
    public static let maximumHistory = 1_000
    /// The most `Window=` lines taken.
    public static let maximumWindows = 64

    private static let builtIn = ActivationSettings()

    /// The `[Activation]` keys, for ``ConfigKeys``.
    static let configKeys: [ConfigKey] = [
        ConfigKey(section: "Activation", key: "Window") { config, value, location throws(ConfigError) in
            guard !value.isEmpty else { return config.activationSettings.windows = WindowSchedule() }
            guard config.activationSettings.windows.windows.count < maximumWindows else {
                throw ConfigError(location, "Window= is set more than \(maximumWindows) times")
            }
            do {
                config.activationSettings.windows.windows.append(try MaintenanceWindow.parse(value))
            } catch {
                throw ConfigError(location, "Window= '\(TextEscaping.terminal(value))' \(error)")
            }
        },
        ConfigKey(section: "Activation", key: "HealthCheck") { config, value, location throws(ConfigError) in
            guard value.isEmpty || value.hasPrefix("/") else {
                throw ConfigError(
                    location, "HealthCheck= must be an absolute path, got '\(TextEscaping.terminal(value))'")
            }
            config.activationSettings.healthCheck = value.isEmpty ? nil : value
        },
        duration("HealthTimeout", \.healthTimeout),
        duration("HoldLimit", \.holdLimit),
        ConfigKey(section: "Activation", key: "History") { config, value, location throws(ConfigError) in
            guard !value.isEmpty else { return config.activationSettings.history = builtIn.history }
            guard value.utf8.count <= 6, value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let count = Int(value),
                (1...maximumHistory).contains(count)
            else {
                throw ConfigError(
                    location,
                    "History= must be a number from 1 to \(maximumHistory), got '\(TextEscaping.terminal(value))'")
            }
            config.activationSettings.history = count
        },
    ]

    private static func duration(_ key: String, _ property: WritableKeyPath<ActivationSettings, Duration> & Sendable)
        -> ConfigKey
    {
        ConfigKey(section: "Activation", key: key) { config, value, location throws(ConfigError) in
            guard !value.isEmpty else {
                return config.activationSettings[keyPath: property] = builtIn[keyPath: property]
            }
            guard let duration = DurationText.parse(value) else {
                throw ConfigError(location, "\(key)= '\(value)' is not a duration (e.g. 500ms, 30s, 5min, 12h, 1d)")
            }
            guard duration > .zero else { throw ConfigError(location, "\(key)= must be greater than 0") }
            config.activationSettings[keyPath: property] = duration
        }
    }
}
