import RCCore
import RCGoogle

/// `rcadmin project-id` and `rcadmin token`: the service account's project and an access token,
/// for scripts that call a Google API this tool does not cover.
enum TokenCommands {
    static let projectId = AdminCommand(
        words: ["project-id"], synopsis: "[--service-account FILE] [--json]",
        help: """
            Prints the project_id of the service account's key file (no network access): the project
            every other command works on.
            """,
        options: [.value("service-account", "FILE"), .flag("json")], arguments: 0...0
    ) { options, environment throws(AdminFailure) in
        // The key file alone: a CI step can learn the project without network access or a token.
        let account = try GoogleContext.account(options, environment: environment)
        if options.flag("json") {
            Output.json(
                .object([("projectId", .string(account.projectId)), ("clientEmail", .string(account.clientEmail))]))
        } else {
            Output.data(TextEscaping.terminal(account.projectId) + "\n")
        }
    }

    /// `--scope` names and the OAuth scopes they stand for.
    static let scopes: [(name: String, scopes: [String])] = [
        ("remote-config", [GoogleScope.remoteConfig]), ("messaging", [GoogleScope.messaging]),
        ("all", [GoogleScope.remoteConfig, GoogleScope.messaging]),
    ]

    static let token = AdminCommand(
        words: ["token"], synopsis: "[--scope remote-config|messaging|all] [--service-account FILE] [--json]",
        help: """
            Signs a JWT with the service account's key, exchanges it at the key file's token_uri and
            prints the access token (valid for about an hour), for scripts:
              curl -H "Authorization: Bearer $(rcadmin token)" ...
            --scope picks the OAuth scopes (default all: Remote Config and FCM). With --json:
            {"accessToken", "scopes"}.
            """,
        options: AdminCommand.googleOptions + [.value("scope", "SCOPE")], arguments: 0...0
    ) { options, environment throws(AdminFailure) in
        let name = try options.choice("scope", scopes.map(\.name)) ?? "all"
        let wanted = scopes.first { $0.name == name }?.scopes ?? []
        // A narrower scope gives a script a token that can do less if it leaks.
        let context = try GoogleContext(options, environment: environment, scopes: wanted)
        let token: String
        do throws(GoogleError) { token = try await context.tokens.token() } catch { throw GoogleContext.failure(error) }
        if options.flag("json") {
            Output.json(
                .object([("accessToken", .string(token)), ("scopes", .array(wanted.map { .string($0) }))]))
        } else {
            // AccessTokens accepts printable ASCII only (the token goes into a header): safe as is.
            Output.data(token + "\n")
        }
    }
}
