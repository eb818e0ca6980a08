import RCCore
import RCGoogle

/// What a command needs to call Google, built from its options and the environment: the service
/// account (`--service-account FILE`, else `GOOGLE_APPLICATION_CREDENTIALS`), its access tokens,
/// and the Remote Config and FCM APIs at Google or at `--endpoint URL` / `RCADMIN_ENDPOINT`
/// (scheme, host and port only; the token URL is always the key file's `token_uri`).
struct GoogleContext: Sendable {
    let account: ServiceAccount
    let tokens: AccessTokens
    let api: GoogleAPI
    /// The endpoint override, if any.
    let endpoint: String?

    /// Both scopes by default: one token serves a `set-update --notify --fcm` as well as a
    /// `template get`, and a scope the account has no role for costs nothing until it is used.
    init(
        _ options: ParsedOptions, environment: [String: String],
        scopes: [String] = [GoogleScope.remoteConfig, GoogleScope.messaging]
    ) throws(AdminFailure) {
        account = try Self.account(options, environment: environment)
        endpoint = try Self.endpoint(options, environment: environment)
        tokens = AccessTokens(account: account, scopes: scopes)
        api = GoogleAPI(tokens: tokens)
    }

    /// The key file named by the option or the environment, read and checked.
    static func account(_ options: ParsedOptions, environment: [String: String]) throws(AdminFailure)
        -> ServiceAccount
    {
        let path = options.value("service-account") ?? environment["GOOGLE_APPLICATION_CREDENTIALS"]
        guard let path, !path.isEmpty else {
            throw .usage(
                "no service account: give --service-account FILE or set GOOGLE_APPLICATION_CREDENTIALS "
                    + "to the key file (the JSON the Cloud console downloads for a service account)")
        }
        let account: ServiceAccount
        do { account = try ServiceAccount.load(path: path) } catch { throw Self.failure(error) }
        if let warning = ServiceAccount.exposureWarning(path: path) { Output.note("Warning: \(warning)") }
        return account
    }

    /// `--endpoint URL`, else `RCADMIN_ENDPOINT`, checked to be an http(s) URL with a host.
    static func endpoint(_ options: ParsedOptions, environment: [String: String]) throws(AdminFailure) -> String? {
        let (text, source) =
            options.value("endpoint").map { ($0, "--endpoint") }
            ?? environment["RCADMIN_ENDPOINT"].map { ($0, "RCADMIN_ENDPOINT") } ?? (nil, "")
        guard let text else { return nil }
        // An empty variable is unset, as shells treat them; an empty option is a mistake to point
        // out (`--endpoint "$TEST_SERVER"` with nothing in it), not a silent switch to Google itself.
        if text.isEmpty {
            guard source == "RCADMIN_ENDPOINT" else { throw .usage("--endpoint needs a URL, got an empty value") }
            return nil
        }
        guard URLText.origin(of: text) != nil else {
            throw .usage(
                "\(source) must be an http:// or https:// URL with a host, got '\(TextEscaping.terminal(text))'")
        }
        return text
    }

    /// The client template's API (`firebase`), or the server template's with `--server`.
    func remoteConfig(server: Bool) -> RemoteConfigAPI {
        RemoteConfigAPI(
            api: api, project: account.projectId, namespace: server ? .server : .client, endpoint: endpoint)
    }

    var fcm: FCMAPI { FCMAPI(api: api, project: account.projectId, endpoint: endpoint) }

    /// A Google error as the command's failure: "try again later" answers and unreachable servers
    /// (after the retries) are 69, anything else is 1. `hint` is added for the operator.
    static func failure(_ error: GoogleError, hint: String? = nil) -> AdminFailure {
        let message = hint.map { "\(error.description): \($0)" } ?? error.description
        return AdminFailure(isUnavailable(error) ? .unavailable : .failure, message)
    }

    /// Whether Google could not be reached or kept asking to wait: a retryable status that was
    /// still there when the retries ended, or no answer at all after them. (RetryPolicy throws
    /// those two, and only those, with "gave up" in the message; an answer like 403 or a refused
    /// key file is the operator's to fix, not to retry.)
    static func isUnavailable(_ error: GoogleError) -> Bool {
        if let status = error.status { return RetryPolicy.retryableStatuses.contains(status) }
        return error.message.contains("gave up after")
    }
}
