import RCCore

/// The installed version of the device's app as the config names it: `[App] Version=`, else the
/// version dpkg has installed of `[App] Package=`. `rcagent check-update` and the daemon's report
/// ask the same question, so they share this answer.
public enum InstalledApp {
    /// Where dpkg's status database is: `RCAGENT_DPKG_STATUS` (tests), else dpkg's own path.
    public static func dpkgStatusFile(environment: [String: String]) -> String {
        environment["RCAGENT_DPKG_STATUS"] ?? DpkgStatus.defaultPath
    }

    /// The installed version and where it came from (for error messages); an error when the config
    /// names none or dpkg does not have the package installed.
    public static func version(config: AgentConfig, dpkgStatusFile: String) throws(UpdateCheckError)
        -> (version: String, origin: String)
    {
        if let version = config.appVersion { return (version, "[App] Version=") }
        if let package = config.appPackage {
            return (
                try DpkgStatus.installedVersion(of: package, statusFile: dpkgStatusFile), "dpkg version of \(package)"
            )
        }
        throw UpdateCheckError("no installed version: set [App] Version= or Package=")
    }

    /// The update keys `config` names, required first, with the values `value(key)` finds.
    public static func offers(config: AgentConfig, value: (String) throws -> String?) rethrows
        -> [(kind: UpdateKind, key: String, value: String?)]
    {
        [
            (.required, config.requiredUpdateKey, try value(config.requiredUpdateKey)),
            (.recommended, config.recommendedUpdateKey, try value(config.recommendedUpdateKey)),
        ]
    }
}
