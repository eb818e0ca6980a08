import Foundation
import Glibc
import TestSupport
import Testing

/// The firebase source end to end: rcagentd against a fake Firebase server process that speaks the
/// documented installations, fetch and realtime protocols.
@Suite struct FirebaseSourceTests {
    /// Publishes template 2 (`a` = 2), announces it on the realtime stream and waits until the
    /// daemon has activated it (seen by a `watch` that subscribed before the announcement).
    func announceTemplate2(_ sandbox: Sandbox, _ server: FirebaseServer, _ daemon: DaemonProcess) throws {
        let watcher = try SocketClient(path: sandbox.socketPath)
        #expect(watcher.watch())
        try server.publish(version: 2, entries: ["a": "2"])
        try server.push(["latestTemplateVersionNumber": "2"])
        let activated = watcher.event(timeout: 15) {
            $0["event"] as? String == "activated" && $0["templateVersion"] as? String == "2"
        }
        #expect(activated != nil, "\(daemon.log)")
    }

    /// `push`: more lines for the [Push] section (e.g. `Jitter=0`).
    func sandbox(realtime: String = "no", push: String = "", extra: String = "") throws -> (Sandbox, FirebaseServer) {
        let sandbox = try Sandbox()
        let server = try FirebaseServer(in: sandbox)
        try sandbox.writeConfig(
            extra: """
                \(server.sourceSection())
                [App]
                Version=1.4.0.7
                [Push]
                Realtime=\(realtime)
                \(push)
                [Signals]
                store=berlin-12
                tier=gold
                \(extra)
                """)
        return (sandbox, server)
    }

    func deviceId(_ sandbox: Sandbox) throws -> String {
        let status = try sandbox.cli("status", "--json")
        let json = try #require(JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        return try #require(json["deviceId"] as? String)
    }

    @Test func firstStartRegistersFetchesAndActivates() throws {
        let (sandbox, server) = try sandbox()
        try server.publish(version: 7, entries: ["kiosk_url": "https://example.com/v7", "greeting": "hallo"])
        let daemon = try sandbox.startDaemon()
        let fetch = try sandbox.cli("fetch", "--force", "--wait")
        #expect(fetch.status == 0, "\(fetch.stderr)\n\(daemon.log)")
        #expect(try sandbox.cli("get", "kiosk_url").stdout == "https://example.com/v7\n")
        #expect(try sandbox.cli("get", "greeting", "--json").stdout.contains(#""source":"remote""#))

        let creates = server.requests(api: "create")
        #expect(creates.count == 1)
        let fid = try deviceId(sandbox)
        #expect(
            (creates.first?["body"] as? [String: Any])?["fid"] as? String == fid, "the installation id is the device id"
        )
        let fetches = server.requests(api: "fetch")
        #expect(!fetches.isEmpty)
        #expect(fetches.allSatisfy { $0["problem"] is NSNull }, "\(fetches.map { $0["problem"] ?? "" })")
        let body = try #require(fetches.last?["body"] as? [String: Any])
        #expect(body["appInstanceId"] as? String == fid)
        #expect(body["appId"] as? String == "1:1234567890:linux:abcdef")
        #expect(body["appVersion"] as? String == "1.4.0.7")
        #expect(body["appBuild"] as? String == "7")
        #expect(body["customSignals"] as? [String: String] == ["store": "berlin-12", "tier": "gold"])
        let headers = try #require(fetches.last?["headers"] as? [String: String])
        #expect(headers["x-firebase-rc-fetch-type"] == "BASE/1")

        let credentials = sandbox.statePath + "/installation.json"
        let mode = try FileManager.default.attributesOfItem(atPath: credentials)[.posixPermissions] as? Int
        #expect(mode == 0o600, "the refresh token file is private")
        daemon.stop()
    }

    @Test func restartKeepsTheInstallationAndNoChangeIsNoChange() throws {
        let (sandbox, server) = try sandbox()
        try server.publish(version: 3, entries: ["a": "1"])
        var daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        let fid = try deviceId(sandbox)
        #expect(daemon.stop() == 0)

        daemon = try sandbox.startDaemon()
        let again = try sandbox.cli("fetch", "--force", "--wait")
        #expect(again.stdout == "no change\n", "\(again.stdout)\(again.stderr)")
        #expect(server.requests(api: "create").count == 1, "no second registration")
        #expect(try deviceId(sandbox) == fid)
        let last = try #require(server.requests(api: "fetch").last?["headers"] as? [String: String])
        #expect(last["if-none-match"] == "\"etag-3\"")
        daemon.stop()
    }

    @Test func shortLivedTokensAreRefreshed() throws {
        let (sandbox, server) = try sandbox()
        try server.setMode(["installationExpiresIn": 120, "template": ["version": 1, "entries": ["a": "1"]]])
        let daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        let before = server.requests(api: "token").count
        // 120 s is inside the one-hour expiry buffer: every fetch needs a fresh token.
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        #expect(server.requests(api: "token").count == before + 1)
        #expect(server.requests(api: "create").count == 1)
        daemon.stop()
    }

    @Test func aLostInstallationIsRegisteredAgain() throws {
        let (sandbox, server) = try sandbox()
        try server.setMode(["installationExpiresIn": 120, "template": ["version": 1, "entries": ["a": "1"]]])
        let daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        try server.setMode([
            "installationExpiresIn": 120, "tokenStatus": 404, "template": ["version": 2, "entries": ["a": "2"]],
        ])
        let fetch = try sandbox.cli("fetch", "--force", "--wait")
        #expect(fetch.status == 0, "\(fetch.stderr)")
        #expect(try sandbox.cli("get", "a").stdout == "2\n")

        // A new installation with a new id, as the SDKs make, not the lost id registered again.
        let creates = server.requests(api: "create").compactMap { ($0["body"] as? [String: Any])?["fid"] as? String }
        let deviceId = try deviceId(sandbox)
        #expect(creates.count == 2 && creates.first == deviceId, "\(creates)")
        let replacement = try #require(creates.last)
        #expect(replacement != deviceId && replacement.count == 22, "\(creates)")
        let fetched = server.requests(api: "fetch").last?["body"] as? [String: Any]
        #expect(fetched?["appInstanceId"] as? String == replacement)
        let credentials = try String(contentsOfFile: sandbox.statePath + "/installation.json", encoding: .utf8)
        #expect(credentials.contains(replacement))
        #expect(try self.deviceId(sandbox) == deviceId, "the device id itself stays")
        daemon.stop()
    }

    @Test func anInstallationIdTakenByAnotherIsReplaced() throws {
        let (sandbox, server) = try sandbox()
        #expect(try sandbox.cli("mark-stale", "--reason", "first start").status == 0, "creates the database")
        let deviceId = try deviceId(sandbox)
        try server.setMode(["takenFids": [deviceId], "template": ["version": 3, "entries": ["a": "3"]]])
        let daemon = try sandbox.startDaemon()
        let fetch = try sandbox.cli("fetch", "--force", "--wait")
        #expect(fetch.status == 0, "\(fetch.stderr)\n\(daemon.log)")
        #expect(try sandbox.cli("get", "a").stdout == "3\n")

        let creates = server.requests(api: "create").compactMap { ($0["body"] as? [String: Any])?["fid"] as? String }
        #expect(creates.count == 2 && creates.first == deviceId, "\(creates)")
        let replacement = try #require(creates.last)
        #expect(replacement != deviceId && replacement.count == 22)
        let fetched = server.requests(api: "fetch").last?["body"] as? [String: Any]
        #expect(fetched?["appInstanceId"] as? String == replacement)
        let credentials = try String(contentsOfFile: sandbox.statePath + "/installation.json", encoding: .utf8)
        #expect(credentials.contains(replacement))
        #expect(try self.deviceId(sandbox) == deviceId, "the device id itself stays")

        // Registered once: a restart reuses the new installation.
        daemon.stop()
        let restarted = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        #expect(server.requests(api: "create").count == 2)
        restarted.stop()
    }

    @Test func realtimePushFetchesTheNewTemplate() throws {
        let (sandbox, server) = try sandbox(realtime: "yes")
        try server.publish(version: 1, entries: ["a": "1"])
        let daemon = try sandbox.startDaemon()
        #expect(eventually { !server.requests(api: "realtime").isEmpty }, "\(daemon.log)")
        let stream = try #require(server.requests(api: "realtime").first)
        #expect(stream["problem"] is NSNull, "\(stream)")
        #expect(try eventually { try sandbox.cli("get", "a").stdout == "1\n" })

        try announceTemplate2(sandbox, server, daemon)
        #expect(try sandbox.cli("get", "a").stdout == "2\n")
        let realtimeFetch = server.requests(api: "fetch").last?["headers"] as? [String: String]
        #expect(realtimeFetch?["x-firebase-rc-fetch-type"]?.hasPrefix("REALTIME/") == true)
        daemon.stop()
    }

    @Test func aDroppedStreamReconnectsAndRefetches() throws {
        let (sandbox, server) = try sandbox(realtime: "yes")
        try server.publish(version: 1, entries: ["a": "1"])
        let daemon = try sandbox.startDaemon()
        #expect(eventually { !server.requests(api: "realtime").isEmpty })
        #expect(eventually { server.requests(api: "fetch").count >= 1 })
        let fetchesBefore = server.requests(api: "fetch").count
        // Published while the stream is down: only the refetch after the reconnect can find it.
        try server.publish(version: 2, entries: ["a": "2"])
        try server.dropStreams()
        #expect(eventually { server.requests(api: "realtime").count >= 2 }, "\(daemon.log)")
        #expect(eventually { server.requests(api: "fetch").count > fetchesBefore })
        #expect(try eventually { try sandbox.cli("get", "a").stdout == "2\n" }, "\(daemon.log)")
        daemon.stop()
    }

    @Test func reconnectsWithoutANewerTemplateDoNotFetch() throws {
        let (sandbox, server) = try sandbox(realtime: "yes", push: "Jitter=0")
        try server.publish(version: 1, entries: ["a": "1"])
        let daemon = try sandbox.startDaemon()
        #expect(eventually { !server.requests(api: "realtime").isEmpty })
        #expect(try eventually { try sandbox.cli("get", "a").stdout == "1\n" }, "\(daemon.log)")
        #expect(eventually { server.requests(api: "fetch").count >= 1 })
        let fetchesBefore = server.requests(api: "fetch").count
        // A flapping stream: two drops, two reconnects, nothing new published.
        for reconnects in 2...3 {
            try server.dropStreams()
            #expect(eventually { server.requests(api: "realtime").count >= reconnects }, "\(daemon.log)")
        }
        // An announcement on the last stream: its fetch is handled after anything the reconnects
        // asked for (one ordered queue), so once it is active every reconnect fetch would be counted.
        try announceTemplate2(sandbox, server, daemon)
        let fetches = server.requests(api: "fetch")
        #expect(fetches.count == fetchesBefore + 1, "only the announcement fetched: \(fetches.count - fetchesBefore)")
        daemon.stop()
    }

    @Test func realtimeFetchesAtOnceWithJitterZero() throws {
        let (sandbox, server) = try sandbox(realtime: "yes", push: "Jitter=0")
        try server.publish(version: 1, entries: ["a": "1"])
        let daemon = try sandbox.startDaemon()
        #expect(eventually { !server.requests(api: "realtime").isEmpty })
        #expect(try eventually { try sandbox.cli("get", "a").stdout == "1\n" }, "\(daemon.log)")
        try announceTemplate2(sandbox, server, daemon)
        // The announcement, then at once its fetch (no wait logged), then the activation (its log
        // line follows the event the watch saw).
        #expect(eventually { daemon.log.contains("Activated template 2") }, "\(daemon.log)")
        let log = daemon.log
        let announced = try #require(log.range(of: "Realtime: template 2 published; fetching at once"), "\(log)")
        #expect(!log.contains("Realtime: template 2 published; fetching in"), "\(log)")
        #expect(log.range(of: "Activated template 2")?.lowerBound ?? announced.lowerBound > announced.lowerBound)
        let realtimeFetch = server.requests(api: "fetch").last?["headers"] as? [String: String]
        #expect(realtimeFetch?["x-firebase-rc-fetch-type"] == "REALTIME/1")
        daemon.stop()
    }

    /// A server's `retryIntervalSeconds` is followed up to an hour: a bad or hostile value must not
    /// keep the device from reconnecting for years.
    @Test func aHugeRetryIntervalIsFollowedForAnHourAtMost() throws {
        let (sandbox, server) = try sandbox(realtime: "yes")
        try server.publish(version: 1, entries: ["a": "1"])
        let daemon = try sandbox.startDaemon()
        #expect(eventually { !server.requests(api: "realtime").isEmpty })
        try server.push(["retryIntervalSeconds": "999999999"])
        try server.closeStreams()
        func retryIn() -> Double? {
            let query = try? runProcess(
                "/usr/bin/sqlite3",
                [sandbox.databasePath, "SELECT value FROM meta WHERE key = 'note:realtime.retryAt'"])
            return query.flatMap { Double($0.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) }
                .map { $0 / 1000 - Date().timeIntervalSince1970 }
        }
        #expect(eventually { (retryIn() ?? 0) > 60 }, "\(daemon.log)")
        let wait = try #require(retryIn())
        #expect(wait > 3_500 && wait <= 3_600, "reconnects in \(wait) s")
        daemon.stop()
    }

    @Test func featureDisabledStopsTheStream() throws {
        let (sandbox, server) = try sandbox(realtime: "yes")
        try server.publish(version: 1, entries: ["a": "1"])
        let daemon = try sandbox.startDaemon()
        #expect(eventually { !server.requests(api: "realtime").isEmpty })
        try server.push(["featureDisabled": true])
        #expect(eventually { daemon.log.contains("Realtime updates are disabled") }, "\(daemon.log)")
        #expect(server.requests(api: "realtime").count == 1, "no reconnect after featureDisabled")
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0, "fetching still works")
        daemon.stop()
    }

    /// A project or app Firebase Installations does not know (404 NOT_FOUND, Google's error body)
    /// no retry changes: the stream says so once and stops reconnecting, and `status` shows the
    /// fetch failing with the same answer (fetches go on, with their backoff).
    @Test func aProjectInstallationsDoesNotKnowStopsTheStreamAfterOneLine() throws {
        let (sandbox, server) = try sandbox(realtime: "yes")
        try server.updateMode(["installationsStatus": 404])
        let daemon = try sandbox.startDaemon()
        let stopped =
            "Failed to keep the realtime stream: Firebase Installations: cannot create the installation: HTTP 404"
        #expect(eventually { daemon.log.contains(stopped) }, "\(daemon.log)")
        #expect(
            eventually {
                (try? sandbox.cli("status"))?.stdout.contains("cannot create the installation: HTTP 404") == true
            },
            "\((try? sandbox.cli("status"))?.stdout ?? "")")
        let creates = server.requests(api: "create").count
        let fetch = try sandbox.cli("fetch", "--force", "--wait")
        #expect(fetch.status == 1 && fetch.stderr.contains("HTTP 404"), "\(fetch.stderr)")
        // The fetch asked once more; the stream did not, nor did it log again.
        #expect(server.requests(api: "create").count == creates + 1, "\(daemon.log)")
        #expect(server.requests(api: "realtime").isEmpty)
        #expect(daemon.log.components(separatedBy: "Failed to keep the realtime stream").count == 2, "\(daemon.log)")
        #expect(!daemon.log.contains("Failed to open the realtime stream"), "\(daemon.log)")
        daemon.stop()
    }

    @Test func throttlingAndErrorsNameTheAPIsMessage() throws {
        let (sandbox, server) = try sandbox()
        try server.publish(version: 1, entries: ["a": "1"])
        let daemon = try sandbox.startDaemon()
        #expect(try sandbox.cli("fetch", "--force", "--wait").status == 0)
        try server.setMode(["fetchStatus": 429, "retryAfter": 300, "template": ["version": 2, "entries": ["a": "2"]]])
        let throttled = try sandbox.cli("fetch", "--force", "--wait")
        #expect(throttled.status == 1)
        #expect(throttled.stderr.contains("HTTP 429"))
        #expect(try sandbox.cli("fetch", "--force", "--wait").stderr.contains("throttles fetches until"))
        #expect(try sandbox.cli("get", "a").stdout == "1\n")
        daemon.stop()
    }
}
