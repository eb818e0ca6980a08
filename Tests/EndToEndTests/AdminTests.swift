import Foundation
import Glibc
import TestSupport
import Testing

/// The built `rcadmin` against the fake Google backend process (Tests/Fixtures/firebase_server.py):
/// a real token exchange with a signed JWT, Remote Config REST with gzip-only ETags and If-Match,
/// FCM v1 send, injected failures. Everything is checked from the outside: exit codes, stdout and
/// stderr, the server's request log, its template state and its FCM log.
@Suite struct AdminTests {
    static let project = "demo-project"
    static let beta = "beta"

    /// An update offer as the update key's value holds it.
    static func offer(_ version: String) -> String {
        #"{"version":"\#(version)","download":"https://dl.example/app_\#(version).deb"}"#
    }

    /// The template the project starts from (version 1): the update key with a conditional value
    /// for beta devices, a value type and a description, plus a grouped parameter.
    static var seed: [String: Any] {
        [
            "conditions": [["name": beta, "expression": "device.os == 'linux'", "tagColor": "BLUE"]],
            "parameters": [
                "linux_required_update": [
                    "defaultValue": ["value": offer("1.0.0")],
                    "conditionalValues": [beta: ["value": offer("1.3.0")]],
                    "valueType": "JSON", "description": "the oldest version allowed to run",
                ],
                "greeting": ["defaultValue": ["value": "hello"], "valueType": "STRING"],
            ],
            "parameterGroups": [
                "kiosk": ["parameters": ["kiosk_url": ["defaultValue": ["value": "https://example.com/k"]]]]
            ],
        ]
    }

    /// A sandbox, the fake backend with the seeded template and the project's service account.
    struct Fixture {
        let sandbox: Sandbox
        let server: FirebaseServer
        let account: TestServiceAccount

        init(seed: [String: Any]? = AdminTests.seed) throws {
            sandbox = try Sandbox()
            server = try FirebaseServer(in: sandbox)
            account = try server.makeServiceAccount(project: AdminTests.project)
            if let seed { try server.seedAdminTemplate(seed) }
        }

        /// Runs `rcadmin` with the key file and endpoint from the environment, as a CI job would.
        func rcadmin(_ arguments: [String], environment: [String: String] = [:]) throws -> ProcessResult {
            let base = ["GOOGLE_APPLICATION_CREDENTIALS": account.keyFilePath, "RCADMIN_ENDPOINT": server.endpoint]
            return try sandbox.run("rcadmin", arguments, environment: base.merging(environment) { $1 })
        }

        func path(_ name: String) -> String { sandbox.root.appendingPathComponent(name).path }

        /// The current client template's parameter `key` (top level).
        func parameter(_ key: String) -> [String: Any]? {
            (server.adminTemplate()?.template["parameters"] as? [String: Any])?[key] as? [String: Any]
        }

        func requests(_ api: String) -> [[String: Any]] { server.requests(api: api) }

        /// Publishes one version per app version with `set-update --required` (Linux), in turn.
        func setRequiredUpdates(_ versions: [String]) throws {
            for version in versions {
                let set = try rcadmin([
                    "set-update", "--required", "--platform", "linux", "--version", version, "--download",
                    "https://dl.example/app_\(version).deb",
                ])
                #expect(set.status == 0, "\(set.stderr)")
            }
        }
    }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
    }

    static func readJSON(_ path: String) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
    }

    static func writeJSON(_ object: [String: Any], to path: String) throws {
        try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]).write(to: URL(fileURLWithPath: path))
    }

    // MARK: - Service account

    @Test func projectIdAndToken() throws {
        let fixture = try Fixture()
        let projectId = try fixture.rcadmin(["project-id"])
        #expect(projectId.status == 0 && projectId.stdout == "\(Self.project)\n", "\(projectId.stderr)")
        #expect(fixture.requests("oauth-token").isEmpty, "project-id reads the key file only")
        let asJSON = try Self.json(fixture.rcadmin(["project-id", "--json"]).stdout)
        #expect(asJSON["projectId"] as? String == Self.project)

        let token = try fixture.rcadmin(["token", "--scope", "messaging"])
        #expect(token.status == 0, "\(token.stderr)")
        let exchange = try #require(fixture.requests("oauth-token").last)
        #expect(exchange["status"] as? Int == 200, "\(exchange)")
        let tokenText = token.stdout.trimmingCharacters(in: .newlines)
        #expect(!tokenText.isEmpty && !tokenText.contains(" "))
        // The token works for FCM, where the fake checks the scope it was issued with.
        let sent = try fixture.rcadmin(["notify-stale", "--fcm"])
        #expect(sent.status == 0, "\(sent.stderr)")

        let all = try Self.json(fixture.rcadmin(["token", "--json"]).stdout)
        #expect((all["scopes"] as? [String])?.count == 2)
        #expect(try fixture.rcadmin(["token", "--scope", "everything"]).status == 64)
    }

    @Test func aMissingServiceAccountIsAClearError() throws {
        let fixture = try Fixture()
        let none = try fixture.rcadmin(["template", "get"], environment: ["GOOGLE_APPLICATION_CREDENTIALS": ""])
        #expect(none.status == 64)
        #expect(
            none.stderr.hasPrefix(
                "Error: no service account: give --service-account FILE or set GOOGLE_APPLICATION_CREDENTIALS"))
        let missing = try fixture.rcadmin(["project-id", "--service-account", fixture.path("nope.json")])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("nope.json: no such file"), "\(missing.stderr)")
        try "{\"type\": \"authorized_user\"}".write(
            toFile: fixture.path("user.json"), atomically: true, encoding: .utf8)
        let user = try fixture.rcadmin(["token", "--service-account", fixture.path("user.json")])
        #expect(user.status == 1 && user.stderr.contains("not \"service_account\""), "\(user.stderr)")
    }

    // MARK: - Templates

    @Test func getToAFileThenPublishFromIt() throws {
        let fixture = try Fixture()
        let shown = try fixture.rcadmin(["template", "get"])
        #expect(shown.status == 0, "\(shown.stderr)")
        #expect(try Self.json(shown.stdout)["parameters"] != nil)
        #expect(shown.stderr == "version 1, ETag etag-\(Self.project)-1\n")

        let file = fixture.path("template.json")
        let saved = try fixture.rcadmin(["template", "get", "-o", file])
        #expect(saved.stdout == "wrote version 1 to \(file) (ETag etag-\(Self.project)-1)\n", "\(saved.stderr)")
        var template = try Self.readJSON(file)
        #expect(template["etag"] as? String == "etag-\(Self.project)-1")
        var parameters = try #require(template["parameters"] as? [String: Any])
        parameters["greeting"] = ["defaultValue": ["value": "moin"], "valueType": "STRING"]
        template["parameters"] = parameters
        try Self.writeJSON(template, to: file)

        let published = try fixture.rcadmin(["template", "publish", file, "--description", "greeting: moin"])
        #expect(published.status == 0, "\(published.stderr)")
        #expect(published.stdout == "published version 2 (ETag etag-\(Self.project)-2)\n")
        let put = try #require(fixture.requests("rc-put").last)
        #expect((put["headers"] as? [String: String])?["if-match"] == "etag-\(Self.project)-1")
        #expect((put["body"] as? [String: Any])?["etag"] == nil, "the ETag is not sent as a template field")
        #expect((fixture.parameter("greeting")?["defaultValue"] as? [String: String])?["value"] == "moin")
        #expect(fixture.server.adminVersions().last?["description"] as? String == "greeting: moin")

        // The file still carries version 1's ETag: publishing it again would undo whatever came since.
        let stale = try fixture.rcadmin(["template", "publish", file])
        #expect(stale.status == 1)
        #expect(stale.stderr.contains("HTTP 409 ABORTED"), "\(stale.stderr)")
        #expect(
            stale.stderr.hasSuffix(
                ": someone else published since, or this file was published already: run template get -o FILE "
                    + "again (publish --update-file keeps the file's ETag current)\n"), "\(stale.stderr)")
        try fixture.server.updateMode(["staleEtagStatus": 412])
        let stale412 = try fixture.rcadmin(["template", "publish", file])
        #expect(stale412.status == 1 && stale412.stderr.contains("HTTP 412"), "\(stale412.stderr)")
        #expect(fixture.server.adminTemplate()?.version == 2, "nothing was published")

        // --force overwrites (If-Match: *); --update-file leaves the file ready for the next publish.
        let forced = try fixture.rcadmin(["template", "publish", file, "--force", "--update-file"])
        #expect(forced.status == 0 && forced.stdout.hasPrefix("published version 3 "), "\(forced.stderr)")
        #expect((fixture.requests("rc-put").last?["headers"] as? [String: String])?["if-match"] == "*")
        #expect(try Self.readJSON(file)["etag"] as? String == "etag-\(Self.project)-3")
        let next = try fixture.rcadmin(["template", "publish", file, "--json"])
        let answer = try Self.json(next.stdout)
        #expect(answer["version"] as? Int == 4 && answer["etag"] as? String == "etag-\(Self.project)-4", "\(next)")

        // A file that never had an ETag needs --force.
        template.removeValue(forKey: "etag")
        try Self.writeJSON(template, to: fixture.path("hand-made.json"))
        let unbased = try fixture.rcadmin(["template", "publish", fixture.path("hand-made.json")])
        #expect(unbased.status == 1 && unbased.stderr.contains("has no \"etag\""), "\(unbased.stderr)")
        #expect(fixture.server.adminTemplate()?.version == 4)
    }

    @Test func validateOnlyChangesNothing() throws {
        let fixture = try Fixture()
        let file = fixture.path("template.json")
        #expect(try fixture.rcadmin(["template", "get", "-o", file]).status == 0)
        let before = try String(contentsOfFile: file, encoding: .utf8)
        let validated = try fixture.rcadmin(["template", "publish", file, "--validate-only"])
        #expect(validated.status == 0, "\(validated.stderr)")
        #expect(validated.stdout.hasPrefix("valid: "))
        #expect(fixture.server.adminVersions().count == 1)
        #expect((fixture.requests("rc-put").last?["query"] as? [String: Any])?["validateOnly"] != nil)
        #expect(try String(contentsOfFile: file, encoding: .utf8) == before)
        // The validation's ETag (…-0) was not kept: the real publish from the same file works.
        #expect(try fixture.rcadmin(["template", "publish", file]).stdout.hasPrefix("published version 2 "))

        // A template Google refuses: the error names the status and Google's message.
        var broken = try Self.readJSON(file)
        broken["parameters"] = ["bad key!": ["defaultValue": ["value": "x"]]]
        broken["etag"] = "etag-\(Self.project)-2"
        try Self.writeJSON(broken, to: file)
        let refused = try fixture.rcadmin(["template", "publish", file, "--validate-only"])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("HTTP 400 INVALID_ARGUMENT: [VALIDATION_ERROR]"), "\(refused.stderr)")
    }

    @Test func versionsAndRollback() throws {
        let fixture = try Fixture()
        try fixture.setRequiredUpdates(["1.1.0", "1.2.0"])
        let table = try fixture.rcadmin(["template", "versions"])
        let lines = table.stdout.split(separator: "\n")
        #expect(lines.count == 4, "\(table.stdout)")
        #expect(lines.first?.hasPrefix("VERSION") == true)
        #expect(lines.dropFirst().first?.hasPrefix("3 ") == true, "newest first")
        #expect(table.stdout.contains("rcadmin set-update: linux_required_update 1.2.0"))
        let limited = try fixture.rcadmin(["template", "versions", "--limit", "2", "--json"])
        let listed = try #require(JSONSerialization.jsonObject(with: Data(limited.stdout.utf8)) as? [[String: Any]])
        #expect(listed.map { $0["versionNumber"] as? String } == ["3", "2"])

        let rolledBack = try fixture.rcadmin(["template", "rollback", "1"])
        #expect(rolledBack.status == 0, "\(rolledBack.stderr)")
        #expect(rolledBack.stdout.hasPrefix("rolled back to version 1: published as version 4 (ETag etag-"))
        #expect(fixture.server.adminVersions().last?["updateType"] as? String == "ROLLBACK")
        #expect(
            (fixture.parameter("linux_required_update")?["defaultValue"] as? [String: String])?["value"]
                == Self.offer("1.0.0"))
        let gone = try fixture.rcadmin(["template", "rollback", "99"])
        #expect(gone.status == 1 && gone.stderr.contains("HTTP 404"), "\(gone.stderr)")
        #expect(try fixture.rcadmin(["template", "rollback", "x"]).status == 64)
    }

    // MARK: - set-update

    @Test func setUpdateKeepsConditionalValuesAndValueTypeAndDiffSaysWhatChanged() throws {
        let fixture = try Fixture()
        let set = try fixture.rcadmin([
            "set-update", "--platform", "linux", "--required", "--version", "1.5.0", "--download",
            "https://dl.example/app_1.5.0.deb", "--deadline", "2030-01-01T12:00:00+02:00",
        ])
        #expect(set.status == 0, "\(set.stderr)")
        let offer =
            #"{"version":"1.5.0","download":"https://dl.example/app_1.5.0.deb","deadline":"2030-01-01T10:00:00Z"}"#
        #expect(
            set.stdout.hasPrefix(#"updated "linux_required_update" in the top-level parameters: default value "#),
            "\(set.stdout)")
        #expect(set.stdout.contains(#"devices matching "beta" keep their conditional value"#))
        #expect(set.stdout.hasSuffix("published version 2 (ETag etag-\(Self.project)-2)\n"))
        let parameter = try #require(fixture.parameter("linux_required_update"))
        #expect((parameter["defaultValue"] as? [String: String])?["value"] == offer)
        #expect(parameter["valueType"] as? String == "JSON")
        #expect(parameter["description"] as? String == "the oldest version allowed to run")
        #expect(
            ((parameter["conditionalValues"] as? [String: Any])?[Self.beta] as? [String: String])?["value"]
                == Self.offer("1.3.0"))
        #expect(fixture.parameter("greeting") != nil)

        // The same offer again: nothing to publish.
        let again = try fixture.rcadmin([
            "set-update", "--platform", "linux", "--required", "--version", "1.5.0", "--download",
            "https://dl.example/app_1.5.0.deb", "--deadline", "2030-01-01T10:00:00Z", "--json",
        ])
        #expect(again.status == 0, "\(again.stderr)")
        let outcome = try Self.json(again.stdout)
        #expect(outcome["outcome"] as? String == "unchanged" && outcome["published"] as? Bool == false)
        #expect(fixture.server.adminVersions().count == 2 && fixture.requests("rc-put").count == 1)

        // What a reviewer reads: the one parameter's default value, old -> new.
        let diff = try fixture.rcadmin(["template", "diff", "1"])
        #expect(diff.status == 0, "\(diff.stderr)")
        #expect(
            diff.stdout == #"parameter "linux_required_update": default value \#(Self.offer("1.0.0")) -> \#(offer)"#
                + "\n")
        let file = fixture.path("v1.json")
        #expect(try fixture.rcadmin(["template", "get", "--version", "1", "-o", file]).status == 0)
        let fromFile = try fixture.rcadmin(["template", "diff", "current", file, "--json"])
        let changes = try #require(JSONSerialization.jsonObject(with: Data(fromFile.stdout.utf8)) as? [[String: Any]])
        #expect(changes.count == 1 && changes.first?["field"] as? String == "defaultValue", "\(fromFile.stdout)")
        #expect(try fixture.rcadmin(["template", "diff", file, file]).stdout == "no differences\n")

        // --dry-run has Google validate the change and publishes nothing.
        let dry = try fixture.rcadmin([
            "set-update", "--recommended", "--platform", "android", "--version", "2.1", "--download",
            "https://dl.example/app.apk", "--dry-run",
        ])
        #expect(dry.status == 0 && dry.stdout.hasSuffix("dry run: Google accepts the change; nothing was published\n"))
        #expect(dry.stdout.hasPrefix(#"added "android_recommended_update""#), "\(dry.stdout)")
        #expect(fixture.server.adminVersions().count == 2)
    }

    @Test func aConcurrentPublishSurvivesSetUpdate() throws {
        let fixture = try Fixture()
        // Someone adds a parameter in the console between set-update's read and its publish.
        var theirs = Self.seed
        var parameters = try #require(theirs["parameters"] as? [String: Any])
        parameters["theirs"] = ["defaultValue": ["value": "console"], "valueType": "STRING"]
        theirs["parameters"] = parameters
        try fixture.server.publishBeforeNextPut(theirs)
        let set = try fixture.rcadmin([
            "set-update", "--required", "--platform", "linux", "--version", "1.6.0", "--download",
            "https://dl.example/app_1.6.0.deb",
        ])
        #expect(set.status == 0, "\(set.stderr)")
        #expect(
            set.stderr
                == "someone else published between the read and the publish (HTTP 409); reading it again (attempt 2 of 5)\n"
        )
        #expect(fixture.parameter("theirs") != nil, "the other change survived")
        #expect(
            (fixture.parameter("linux_required_update")?["defaultValue"] as? [String: String])?["value"]
                == Self.offer("1.6.0"))
        let origins = fixture.server.adminVersions().dropFirst().map { $0["updateOrigin"] as? String }
        #expect(origins == ["CONSOLE", "REST_API"])
        #expect(fixture.requests("rc-get").count == 2 && fixture.requests("rc-put").count == 2)

        // Refused as stale every time: bounded, and it says so.
        try fixture.server.setAdminFailures([["api": "rc-put", "status": 409, "times": 5]])
        let busy = try fixture.rcadmin([
            "set-update", "--required", "--platform", "linux", "--version", "1.7.0", "--download",
            "https://dl.example/app_1.7.0.deb",
        ])
        #expect(busy.status == 1)
        #expect(busy.stderr.components(separatedBy: "someone else published between").count == 6, "\(busy.stderr)")
        #expect(
            busy.stderr.contains("Error: the template changed between every read and publish: gave up after 5 attempts")
        )
        #expect(fixture.requests("rc-put").count == 7 && fixture.server.adminVersions().count == 3)
    }

    @Test func remoteTextIsEscapedForTheTerminal() throws {
        let hostile = "hi\u{202e}evil\u{1b}[2J"
        var seed = Self.seed
        var parameters = try #require(seed["parameters"] as? [String: Any])
        parameters["greeting"] = ["defaultValue": ["value": hostile], "valueType": "STRING"]
        seed["parameters"] = parameters
        let fixture = try Fixture(seed: seed)
        for arguments in [["template", "get"], ["template", "get", "--json"]] {
            let shown = try fixture.rcadmin(arguments)
            #expect(shown.status == 0, "\(shown.stderr)")
            #expect(!shown.stdout.contains("\u{202e}") && !shown.stdout.contains("\u{1b}"), "\(arguments)")
            #expect(shown.stdout.contains(#"hi\u202eevil\u001b[2J"#), "\(shown.stdout)")
            // Still JSON, with the same value.
            let json = try Self.json(shown.stdout)
            let template = (json["template"] as? [String: Any]) ?? json
            let greeting = (template["parameters"] as? [String: Any])?["greeting"] as? [String: Any]
            #expect((greeting?["defaultValue"] as? [String: String])?["value"] == hostile)
        }
        let set = try fixture.rcadmin([
            "set-update", "--required", "--platform", "linux", "--version", "1.5.0", "--download",
            "https://dl.example/app.deb", "--message", "Bitte aktualisieren",
        ])
        #expect(set.status == 0, "\(set.stderr)")
        let diff = try fixture.rcadmin(["template", "diff", "1", "2"])
        #expect(!diff.stdout.contains("\u{1b}") && diff.stdout.contains("Bitte aktualisieren"), "\(diff.stdout)")
    }

    // MARK: - Failures, retries, tokens

    @Test func retryAfterIsHonouredAndExhaustedRetriesExit69() throws {
        let fixture = try Fixture()
        try fixture.server.setAdminFailures([["api": "rc-get", "status": 429, "retryAfter": "1", "times": 1]])
        let throttled = try fixture.rcadmin(["template", "get", "--json"])
        #expect(throttled.status == 0, "\(throttled.stderr)")
        let gets = fixture.requests("rc-get")
        #expect(gets.map { $0["status"] as? Int } == [429, 200])
        let waited = try #require(gets.last?["time"] as? Double) - (try #require(gets.first?["time"] as? Double))
        #expect(waited >= 0.95, "Retry-After: 1 was honoured (\(waited) s)")

        try fixture.server.setAdminFailures([["api": "rc-get", "status": 503, "retryAfter": "0", "times": 9]])
        let unavailable = try fixture.rcadmin(["template", "get"])
        #expect(unavailable.status == 69, "\(unavailable.stderr)")
        #expect(unavailable.stderr.contains("HTTP 503 UNAVAILABLE"), "\(unavailable.stderr)")
        #expect(unavailable.stderr.contains("gave up after 5 attempts"), "\(unavailable.stderr)")

        // No server at all behind the endpoint (the token still comes from the key file's token_uri).
        let nobody = "http://127.0.0.1:\(try MosquittoBroker.freePort())"
        let unreachable = try fixture.rcadmin(["template", "versions", "--endpoint", nobody])
        #expect(unreachable.status == 69, "\(unreachable.stderr)")
        #expect(unreachable.stderr.hasPrefix("Error: Remote Config: list the firebase template's versions: "))
        #expect(unreachable.stderr.contains("gave up after 5 attempts"), "\(unreachable.stderr)")
    }

    @Test func aRefusedTokenIsRenewedOnce() throws {
        let fixture = try Fixture()
        // Google answers 401 for a token that expired or was revoked before its time.
        try fixture.server.setAdminFailures([["api": "rc-get", "status": 401, "times": 1]])
        let get = try fixture.rcadmin(["template", "get", "--json"])
        #expect(get.status == 0, "\(get.stderr)")
        #expect(fixture.requests("oauth-token").count == 2, "a second token after the 401")
        let bearers = fixture.requests("rc-get").map { ($0["headers"] as? [String: String])?["authorization"] }
        #expect(bearers.count == 2 && bearers[0] != bearers[1], "the call was repeated with the new token")

        // Tokens that expire between two runs: the next run simply gets a new one.
        try fixture.server.expireAccessTokens()
        #expect(try fixture.rcadmin(["template", "versions"]).status == 0)
        // Two 401s in a row: renewed once, then the error, naming the status.
        try fixture.server.setAdminFailures([
            ["api": "rc-get", "status": 401, "times": 2, "message": "Request had \u{1b}[31minvalid credentials"]
        ])
        let refused = try fixture.rcadmin(["template", "get"])
        #expect(refused.status == 1)
        #expect(
            refused.stderr.contains("HTTP 401 UNAUTHENTICATED: Request had \\x1b[31minvalid credentials"),
            "\(refused.stderr)")
        #expect(!refused.stderr.contains("\u{1b}"), "Google's words are escaped")
    }

    // MARK: - notify-stale

    @Test func notifyStaleOverFCM() throws {
        let fixture = try Fixture()
        let sent = try fixture.rcadmin(["notify-stale", "--fcm", "--template-version", "7"])
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(
            sent.stdout.hasPrefix(
                #"sent {"CONFIG_STATE":"STALE","templateVersion":"7"} to FCM topic PUSH_RC as projects/"#),
            "\(sent.stdout)")
        let logged = try #require(fixture.server.fcmMessages.last)
        let message = try #require(logged["message"] as? [String: Any])
        #expect(message["topic"] as? String == "PUSH_RC")
        #expect(message["data"] as? [String: String] == ["CONFIG_STATE": "STALE", "templateVersion": "7"])
        let apns = try #require(message["apns"] as? [String: Any])
        #expect((apns["headers"] as? [String: String])?["apns-priority"] == "5")
        #expect(((apns["payload"] as? [String: Any])?["aps"] as? [String: Any])?["content-available"] as? Int == 1)
        #expect((logged["notes"] as? [Any])?.isEmpty ?? true, "\(logged)")

        // A topic FCM would refuse is refused here, before anything is sent.
        let bad = try fixture.rcadmin(["notify-stale", "--fcm", "--topic", "/topics/PUSH_RC"])
        #expect(bad.status == 1 && bad.stderr.contains("topic"), "\(bad.stderr)")
        #expect(fixture.server.fcmMessages.count == 1)
        // A broker that is not there is "unavailable"; the FCM half still went out.
        let both = try fixture.rcadmin([
            "notify-stale", "--fcm", "--mqtt", "mqtt://127.0.0.1:\(try MosquittoBroker.freePort())",
        ])
        #expect(both.status == 69, "\(both.stderr)")
        #expect(both.stdout.hasPrefix("sent "), "\(both.stdout)")
        // One failure, one line, saying what failed and that the ping did not go out everywhere.
        #expect(both.stderr.split(separator: "\n").count == 1, "\(both.stderr)")
        #expect(
            both.stderr.hasPrefix("Error: cannot publish the stale ping")
                && both.stderr.hasSuffix("(the stale ping did not go out everywhere)\n"), "\(both.stderr)")
        #expect(fixture.server.fcmMessages.count == 2)
    }

    // MARK: - Usage

    @Test func usageErrorsExit64() throws {
        let fixture = try Fixture(seed: nil)
        let update = [
            "set-update", "--required", "--platform", "linux", "--version", "1.5.0", "--download",
            "https://dl.example/a.deb",
        ]
        let cases: [[String]] = [
            [], ["frobnicate"], ["template"], ["template", "fetch"], ["template", "get", "--bogus"],
            ["template", "get", "--version", "latest"], ["template", "get", "--version"], ["template", "publish"],
            ["template", "publish", "a.json", "b.json"], ["template", "versions", "--limit", "0"],
            ["template", "diff"], ["template", "get", "--json", "--json"],
            ["set-update", "--platform", "linux", "--version", "1.5.0", "--download", "https://dl.example/a.deb"],
            update + ["--recommended"], update.filter { $0 != "--required" } + ["--required", "--platform", "ios"],
            ["set-update", "--required", "--platform", "windows", "--version", "1", "--download", "https://d/a"],
            ["set-update", "--required", "--platform", "linux", "--version", "1.5", "--download", "https://d/a"],
            ["set-update", "--required", "--platform", "linux", "--version", "1.5.0", "--download", "ftp://d/a"],
            update + ["--notify"], update + ["--mqtt", "mqtt://127.0.0.1:1"],
            ["notify-stale"], ["notify-stale", "--template-version", "x", "--fcm"],
            ["notify-stale", "--fcm", "--device", "a/b", "--mqtt", "mqtt://h"], ["token", "--endpoint", "ftp://x"],
            ["notify-stale", "--mqtt", "mqtt://h", "--topic", "fleet/#"],
        ]
        for arguments in cases {
            let result = try fixture.rcadmin(arguments)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            #expect(result.stderr.hasPrefix("Error: "), "\(arguments): \(result.stderr)")
            #expect(result.stdout.isEmpty, "\(arguments)")
        }
        #expect(fixture.requests("oauth-token").isEmpty, "no usage error got as far as Google")
        let help = try fixture.rcadmin(["set-update", "--help"])
        #expect(help.status == 0 && help.stdout.hasPrefix("Usage: rcadmin set-update --required|--recommended"))
        #expect(try fixture.rcadmin(["--help"]).stdout.contains("rcadmin template diff A [B]"))
        #expect(try fixture.rcadmin(["template", "--help"]).stdout.contains("Usage: rcadmin template rollback N"))
        // Options anywhere after the command, `--name=value` too.
        #expect(try fixture.rcadmin(["template", "--json", "get"]).status == 64, "options come after the command")
        #expect(try fixture.rcadmin(["token", "--scope=messaging"]).status == 0)
    }

    // MARK: - End to end

    @Test func setUpdateReachesARunningDeviceAndCheckUpdateExits101() throws {
        let fixture = try Fixture()
        try fixture.sandbox.writeConfig(
            extra: """
                \(fixture.server.sourceSection(project: Self.project))
                [App]
                Version=1.4.0
                [Push]
                Realtime=yes
                """)
        let daemon = try fixture.sandbox.startDaemon()
        defer { daemon.stop() }
        let first = try fixture.sandbox.cli("fetch", "--force", "--wait")
        #expect(first.status == 0, "\(first.stderr)\n\(daemon.log)")
        let before = try fixture.sandbox.cli("check-update")
        #expect(before.status == 0, "the seeded required version 1.0.0 is older: \(before.stdout)")

        let watcher = try SocketClient(path: fixture.sandbox.socketPath)
        #expect(watcher.watch())
        let set = try fixture.rcadmin([
            "set-update", "--required", "--platform", "linux", "--version", "1.5.0", "--download",
            "https://dl.example/app_1.5.0.deb", "--notify", "--fcm",
        ])
        #expect(set.status == 0, "\(set.stderr)")
        #expect(set.stdout.contains("published version 2 "), "\(set.stdout)")
        // The publish is announced on the realtime stream the daemon holds open; it fetches version 2.
        let activated = watcher.event(timeout: 20) {
            $0["event"] as? String == "activated" && $0["templateVersion"] as? String == "2"
        }
        #expect(activated != nil, "\(daemon.log)")
        let after = try fixture.sandbox.cli("check-update")
        #expect(after.status == 101, "\(after.stdout)\(after.stderr)")
        #expect(after.stdout.hasPrefix("required update: 1.5.0 (installed 1.4.0)"), "\(after.stdout)")
        // --notify sent the stale ping carrying the new version to the FCM topic.
        let ping = try #require(fixture.server.fcmMessages.last?["message"] as? [String: Any])
        #expect(ping["data"] as? [String: String] == ["CONFIG_STATE": "STALE", "templateVersion": "2"])
    }
}
