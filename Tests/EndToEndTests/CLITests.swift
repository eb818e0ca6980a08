import Foundation
import RCCore
import RCStore
import RCSystem
import TestSupport
import Testing

/// The `rcagent` binary end to end, before and after a daemon ever ran.
@Suite struct CLITests {
    /// Puts `values` into the active snapshot the way a successful fetch would.
    func activate(_ values: [String: String], in sandbox: Sandbox, version: String = "5") throws {
        let config = try AgentConfig.load(explicitPath: sandbox.configPath)
        let store = try StateStore.open(config: config)
        try store.recordFetch(
            .update(values: RemoteValues(values), templateVersion: version, etag: nil), at: .now(), activate: true)
    }

    @Test func getReadsTheDefaultsFileBeforeAnyDatabaseExists() throws {
        let sandbox = try Sandbox()
        let result = try sandbox.cli("get", "greeting")
        #expect(result.status == 0)
        #expect(result.stdout == "hello\n")
        #expect(!FileManager.default.fileExists(atPath: sandbox.databasePath), "a read must not create the database")
    }

    @Test func remoteValueWinsOverDefaultAndFlag() throws {
        let sandbox = try Sandbox()
        try activate(["greeting": "hi from remote"], in: sandbox)
        #expect(try sandbox.cli("get", "greeting").stdout == "hi from remote\n")
        #expect(try sandbox.cli("get", "count").stdout == "3\n")
        let flag = try sandbox.cli("get", "missing", "--default", "fallback", "--json")
        #expect(flag.stdout == #"{"key":"missing","value":"fallback","source":"flag"}"# + "\n")
        let remote = try sandbox.cli("get", "greeting", "--json")
        #expect(remote.stdout == #"{"key":"greeting","value":"hi from remote","source":"remote"}"# + "\n")
    }

    @Test func missingKeyIsExitOneWithAMessage() throws {
        let sandbox = try Sandbox()
        let result = try sandbox.cli("get", "nope")
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("Error: no value for key 'nope'"))
    }

    @Test(arguments: [
        ("enabled", "bool", 0, "true"),
        ("count", "int", 0, "3"),
        ("count", "number", 0, "3"),
        ("greeting", "bool", 65, ""),
        ("greeting", "int", 65, ""),
        ("greeting", "json", 65, ""),
    ])
    func typedReads(key: String, type: String, status: Int32, output: String) throws {
        let sandbox = try Sandbox()
        let result = try sandbox.cli("get", key, "--type", type)
        #expect(result.status == status)
        if status == 0 {
            #expect(result.stdout == output + "\n")
        } else {
            #expect(result.stderr.contains("is not a valid \(type)"))
        }
    }

    @Test func jsonValuesAreReserializedCompactly() throws {
        let sandbox = try Sandbox(defaults: #"{"layout": {"rows": 2, "cols": [1, 2]}}"#)
        #expect(try sandbox.cli("get", "layout").stdout == #"{"cols":[1,2],"rows":2}"# + "\n")
        #expect(try sandbox.cli("get", "layout", "--type", "json").stdout == #"{"cols":[1,2],"rows":2}"# + "\n")
    }

    /// `activity`'s subcommands check their own argument counts: the ID where one is needed, nothing
    /// after the others.
    @Test func activitySubcommandsRefuseAMissingOrExtraArgument() throws {
        let sandbox = try Sandbox()
        for (args, message) in [
            (["activity", "show"], "Error: show needs the activity's ID"),
            (["activity", "remove"], "Error: remove needs the activity's ID"),
            (["activity", "list", "x"], "Error: unexpected argument 'x'"),
            (["activity", "watch", "x"], "Error: unexpected argument 'x'"),
            (["activity", "bogus"], "Error: unknown activity command 'bogus'"),
        ] {
            let result = try sandbox.run("rcagent", args)
            #expect(result.status == 64, "\(args)")
            #expect(result.stderr.hasPrefix(message), "\(args): \(result.stderr)")
            #expect(result.stdout.isEmpty, "\(args)")
        }
    }

    @Test func usageErrorsExit64WithUsageOnStderr() throws {
        let sandbox = try Sandbox()
        for args in [
            ["get"], ["get", "a", "b"], ["get", "a", "--type", "float"], ["get", "a", "--bogus"], ["frobnicate"], [],
        ] {
            let result = try sandbox.run("rcagent", args)
            #expect(result.status == 64, "\(args)")
            #expect(result.stderr.hasPrefix("Error: "), "\(args)")
            #expect(result.stderr.contains("Usage: rcagent"), "\(args)")
            #expect(result.stdout.isEmpty, "\(args)")
        }
    }

    @Test func helpAndVersionGoToStdoutWithExitZero() throws {
        let sandbox = try Sandbox()
        let version = try sandbox.run("rcagent", ["--version"])
        #expect(version.status == 0)
        #expect(version.stdout.hasPrefix("rcagent "))
        let help = try sandbox.run("rcagent", ["get", "--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("Usage: rcagent get KEY"))
        #expect(help.stdout.contains("--type"))
    }

    @Test func badConfigIsReportedWithFileAndLine() throws {
        let sandbox = try Sandbox(extraConfig: "[Agent]\nFetchTimeout=soon")
        // A command that needs the daemon fails on it...
        let fetch = try sandbox.cli("fetch")
        #expect(fetch.status == 1)
        #expect(
            fetch.stderr.hasPrefix(
                "Error: bad config: \(sandbox.configPath):11: FetchTimeout= 'soon' is not a duration"))
        // ...a read warns and goes on (BadConfigReadTests).
        let get = try sandbox.cli("get", "greeting")
        #expect(get.status == 0 && get.stdout == "hello\n")
        #expect(get.stderr.hasPrefix("Warning: \(sandbox.configPath):11: FetchTimeout= 'soon' is not a duration"))
    }

    @Test func everyProblemOfABadConfigIsALineOfItsOwn() throws {
        let sandbox = try Sandbox(extraConfig: "[Agent]\nFetchTimeout=soon\n[Push]\nJitter=much")
        let reload = try sandbox.cli("reload")
        #expect(reload.status == 1)
        let lines = reload.stderr.split(separator: "\n").map(String.init)
        #expect(lines.count == 2, "\(reload.stderr)")
        #expect(lines.first?.hasPrefix("Error: bad config: \(sandbox.configPath):11: FetchTimeout= 'soon'") == true)
        #expect(lines.last?.hasPrefix("\(sandbox.configPath):13: Jitter= 'much'") == true, "\(reload.stderr)")
        #expect(!reload.stderr.contains("\\n"), "a line break printed as its escape: \(reload.stderr)")
    }

    @Test func configComesFromTheEnvironmentWhenNoFlagIsGiven() throws {
        let sandbox = try Sandbox()
        let result = try sandbox.run(
            "rcagent", ["get", "greeting"], environment: ["RCAGENT_CONFIG": sandbox.configPath])
        #expect(result.stdout == "hello\n")
        let missing = try sandbox.run("rcagent", ["get", "greeting", "--config", sandbox.root.path + "/nope.conf"])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("nope.conf: config file not found"))
    }

    @Test func listShowsTheUnionWithSources() throws {
        let sandbox = try Sandbox()
        try activate(["greeting": "hey", "remote_only": "r"], in: sandbox)
        let text = try sandbox.cli("list")
        #expect(
            text.stdout == "count\tdefault\t3\nenabled\tdefault\tyes\ngreeting\tremote\they\nremote_only\tremote\tr\n")
        let json = try sandbox.cli("list", "--prefix", "gr", "--json")
        #expect(json.stdout == #"{"greeting":{"value":"hey","source":"remote"}}"# + "\n")
    }

    @Test func envFormatRoundTripsThroughAShell() throws {
        let tricky = #"a "quoted" $HOME `date` \ back\nslash"# + "\nsecond line 'single'"
        let defaults = try String(
            data: JSONSerialization.data(withJSONObject: ["kiosk.url": tricky, "9lives": "x y"]), encoding: .utf8)!
        let sandbox = try Sandbox(defaults: defaults)
        let env = try sandbox.cli("list", "--format", "env")
        #expect(env.stdout.contains("KIOSK_URL="))
        #expect(env.stdout.contains("_9LIVES=\"x y\""))
        let script = sandbox.root.appendingPathComponent("env.sh").path
        try sandbox.write(env.stdout + "printf '%s' \"$KIOSK_URL\"", to: script)
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        shell.arguments = [script]
        let out = Pipe()
        shell.standardOutput = out
        try shell.run()
        let printed = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        shell.waitUntilExit()
        #expect(printed == tricky)
    }

    @Test func statusBeforeAndAfterMarkStaleWithTheDaemonDown() throws {
        let sandbox = try Sandbox()
        let before = try sandbox.cli("status", "--json")
        #expect(before.status == 0)
        let beforeJSON = try #require(JSONSerialization.jsonObject(with: Data(before.stdout.utf8)) as? [String: Any])
        #expect((beforeJSON["daemon"] as? [String: Any])?["running"] as? Bool == false)
        #expect((beforeJSON["stale"] as? [String: Any])?["set"] as? Bool == false)

        let mark = try sandbox.cli("mark-stale", "--reason", "operator says so")
        #expect(mark.status == 0)
        #expect(mark.stdout == "stale flag set\n")
        #expect(try sandbox.cli("mark-stale").stdout == "stale flag was already set\n")

        let after = try sandbox.cli("status", "--json")
        let json = try #require(JSONSerialization.jsonObject(with: Data(after.stdout.utf8)) as? [String: Any])
        let stale = try #require(json["stale"] as? [String: Any])
        #expect(stale["set"] as? Bool == true)
        #expect(stale["reason"] as? String == "operator says so")
        #expect((stale["since"] as? String)?.hasSuffix("Z") == true)
        #expect(DeviceID.isValid(json["deviceId"] as? String ?? ""))
        #expect((json["source"] as? [String: Any])?["type"] as? String == "file")
        for key in ["active", "fetched", "lastFetch", "throttledUntil", "nextFetchAt"] {
            #expect(json.keys.contains(key), "status --json lacks \(key)")
        }
        // The database mark-stale created carries the defaults: reads still see them.
        #expect(try sandbox.cli("get", "greeting").stdout == "hello\n")
    }

    @Test func garbageDatabaseFallsBackToDefaultsWithAWarning() throws {
        let sandbox = try Sandbox()
        try FileManager.default.createDirectory(atPath: sandbox.statePath, withIntermediateDirectories: true)
        try Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 7919) }).write(
            to: URL(fileURLWithPath: sandbox.databasePath))
        let result = try sandbox.cli("get", "greeting")
        #expect(result.status == 0)
        #expect(result.stdout == "hello\n")
        #expect(result.stderr.contains("Warning: cannot read \(sandbox.databasePath)"))
    }

    /// Damage the open-time probe does not reach (the record holding the update key): `get` falls back
    /// to the defaults file with a warning, but `check-update` cannot tell, since that file lacks
    /// the required update the database holds (issue 16).
    @Test func checkUpdateCannotTellWhenTheUpdateKeysRecordIsDamaged() throws {
        let sandbox = try Sandbox(extraConfig: "[App]\nVersion=1.4.0")
        var values: [String: String] = [:]
        for i in 0..<3_000 { values["k" + String(10_000 + i)] = String(repeating: "v", count: 40) }
        values["linux_required_update"] = #"{"version": "1.5.0", "download": "https://dl.example/app.deb"}"#
        try activate(values, in: sandbox)
        #expect(try sandbox.cli("check-update").status == 101)

        // The active set's record cut short by its last bytes, where the update key's value is
        // ("linux..." sorts after every "k..." key): SQLite finds nothing wrong with its pages, the
        // probe's lookup of "" stops at the first key, and the read of the update key meets the end.
        let cut = try runProcess(
            "/usr/bin/sqlite3",
            [sandbox.databasePath, "UPDATE value_sets SET data = substr(data, 1, length(data) - 10)"])
        try #require(cut.status == 0, "\(cut.stderr)")

        let check = try sandbox.cli("check-update")
        #expect(check.status == 1, "\(check.stdout)\(check.stderr)")
        #expect(check.stderr.contains("Error: cannot tell whether an update applies: cannot read the state database"))
        let get = try sandbox.cli("get", "greeting")
        #expect(get.stdout == "hello\n", "reads other than check-update still fall back: \(get.stderr)")
    }

    @Test func badDefaultsFileIsAClearError() throws {
        let sandbox = try Sandbox(defaults: #"{"a": "b", "broken": }"#)
        let result = try sandbox.cli("get", "a")
        #expect(result.status == 1)
        #expect(result.stderr.contains("bad defaults file: \(sandbox.defaultsPath): invalid JSON"))
    }
}
