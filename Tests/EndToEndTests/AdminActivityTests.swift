import Foundation
import Glibc
import TestSupport
import Testing

/// `rcadmin activity start|update|end`, the built binary: the message it prints with `--dry-run`
/// against the FCM documentation's Live Activity examples, what the fake FCM backend received,
/// what a real mosquitto delivered to a subscriber, and the refusals (exit 64, nothing sent).
@Suite struct AdminActivityTests {
    typealias Fixture = AdminTests.Fixture

    /// The FCM documentation's start example, as JSON: the shape `--dry-run` must print.
    static var documentedStart: [String: Any] {
        [
            "message": [
                "token": "fcm-registration-token",
                "apns": [
                    "live_activity_token": "push-to-start-token",
                    "headers": ["apns-priority": "10"],
                    "payload": [
                        "aps": [
                            "timestamp": 1_700_000_000, "event": "start", "content-state": ["demo": 1],
                            "attributes-type": "DemoAttributes", "attributes": ["demoAttribute": 1],
                            "alert": ["title": "test title", "body": "test body"],
                        ]
                    ],
                ],
            ]
        ]
    }

    static let startArguments = [
        "activity", "start", "--live-activity-token", "push-to-start-token", "--attributes-type", "DemoAttributes",
        "--attributes", #"{"demoAttribute":1}"#, "--content-state", #"{"demo":1}"#, "--alert-title", "test title",
        "--alert-body", "test body", "--timestamp", "1700000000",
    ]

    static func object(_ text: String) throws -> NSDictionary {
        try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? NSDictionary, "\(text)")
    }

    @Test func dryRunPrintsTheDocumentedMessage() throws {
        let fixture = try Fixture(seed: nil)
        let start = try fixture.rcadmin(
            Self.startArguments + ["--dry-run", "--fcm", "--fcm-token", "fcm-registration-token"])
        #expect(start.status == 0, "\(start.stderr)")
        #expect(try Self.object(start.stdout) == Self.documentedStart as NSDictionary, "\(start.stdout)")
        #expect(start.stdout.contains("\n    \"apns\": {"), "pretty JSON: \(start.stdout)")

        // The documentation's update and end examples, with --priority 5 and a dismissal date.
        let update = try fixture.rcadmin([
            "activity", "update", "--live-activity-token", "push-token", "--content-state",
            #"{"test1":100,"test2":"demo"}"#, "--alert-title", "test title", "--alert-body", "test body",
            "--timestamp", "1700000060", "--priority", "5", "--dry-run",
        ])
        #expect(update.status == 0, "\(update.stderr)")
        let updateAPS: [String: Any] = [
            "timestamp": 1_700_000_060, "event": "update", "content-state": ["test1": 100, "test2": "demo"],
            "alert": ["title": "test title", "body": "test body"],
        ]
        let expectedUpdate: [String: Any] = [
            "message": [
                "apns": [
                    "live_activity_token": "push-token", "headers": ["apns-priority": "5"],
                    "payload": ["aps": updateAPS],
                ]
            ]
        ]
        #expect(try Self.object(update.stdout) == expectedUpdate as NSDictionary, "\(update.stdout)")

        let end = try fixture.rcadmin([
            "activity", "end", "--live-activity-token", "push-token", "--timestamp", "1700000120",
            "--dismissal-date", "1700003600", "--stale-date", "1700000600", "--dry-run",
        ])
        #expect(end.status == 0, "\(end.stderr)")
        let endAPS =
            try #require(
                ((try Self.object(end.stdout)["message"] as? NSDictionary)?["apns"] as? NSDictionary)?["payload"]
                    as? NSDictionary)["aps"] as? NSDictionary
        let expectedEnd: [String: Any] = [
            "timestamp": 1_700_000_120, "event": "end", "dismissal-date": 1_700_003_600, "stale-date": 1_700_000_600,
        ]
        #expect(endAPS == expectedEnd as NSDictionary, "\(end.stdout)")

        // Without --timestamp it is now, in seconds.
        let before = Int(Date().timeIntervalSince1970)
        let now = try fixture.rcadmin(["activity", "end", "--live-activity-token", "t", "--dry-run"])
        let after = Int(Date().timeIntervalSince1970)
        let stamp = try #require(now.stdout.firstMatch(of: /"timestamp": (\d+)/).flatMap { Int($0.1) })
        #expect((before...after).contains(stamp), "\(now.stdout)")
        #expect(
            fixture.server.fcmMessages.isEmpty && fixture.requests("oauth-token").isEmpty, "a dry run sends nothing")
    }

    @Test func sendsThroughFCM() throws {
        let fixture = try Fixture(seed: nil)
        let sent = try fixture.rcadmin(Self.startArguments + ["--fcm", "--fcm-token", "fcm-registration-token"])
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(
            sent.stdout.hasPrefix("sent the activity start of push-to-start-token to FCM as projects/"),
            "\(sent.stdout)")
        let logged = try #require(fixture.server.fcmMessages.last)
        #expect(
            ["message": logged["message"] as Any] as NSDictionary == Self.documentedStart as NSDictionary,
            "\(logged)")
        #expect((logged["notes"] as? [Any])?.isEmpty ?? true, "\(logged)")

        let update = try fixture.rcadmin([
            "activity", "update", "--live-activity-token", "push-to-start-token", "--content-state", #"{"demo":2}"#,
            "--priority", "5", "--fcm", "--fcm-token", "fcm-registration-token",
        ])
        #expect(update.status == 0, "\(update.stderr)")
        let message = try #require(fixture.server.fcmMessages.last?["message"] as? [String: Any])
        #expect(message["token"] as? String == "fcm-registration-token")
        let apns = try #require(message["apns"] as? [String: Any])
        #expect(apns["live_activity_token"] as? String == "push-to-start-token")
        #expect(apns["headers"] as? [String: String] == ["apns-priority": "5"])
        #expect(fixture.server.fcmMessages.count == 2)

        // FCM's refusal (a registration token it no longer knows) is the command's failure: exit 1.
        try fixture.server.updateMode(["fcmUnregisteredTokens": ["gone-token"]])
        let gone = try fixture.rcadmin(Self.startArguments + ["--fcm", "--fcm-token", "gone-token"])
        #expect(gone.status == 1, "\(gone.stderr)")
        #expect(gone.stderr.contains("HTTP 404") && gone.stderr.contains("UNREGISTERED"), "\(gone.stderr)")
        // One failure, one line: FCM's answer, not a second line saying it again.
        #expect(gone.stderr.hasPrefix("Error: ") && gone.stderr.split(separator: "\n").count == 1, "\(gone.stderr)")
        // Without a service account nothing can go to FCM: a usage error, like the other commands'.
        let noAccount = try fixture.rcadmin(
            Self.startArguments + ["--fcm", "--fcm-token", "r"], environment: ["GOOGLE_APPLICATION_CREDENTIALS": ""])
        #expect(noAccount.status == 64 && noAccount.stderr.contains("no service account"), "\(noAccount.stderr)")
        #expect(fixture.server.fcmMessages.count == 2)
    }

    @Test func publishesToTheDeviceTopicOverMQTT() throws {
        let fixture = try Fixture(seed: nil)
        let broker = try MosquittoBroker(in: fixture.sandbox)
        let subscriber = try RelayTests.Subscriber(broker, in: fixture.sandbox, topic: "PUSH_RC/kiosk-7")
        // With --fcm as well: the FCM token goes to FCM only, never onto the broker.
        let sent = try fixture.rcadmin(
            Self.startArguments + [
                "--mqtt", "mqtt://127.0.0.1:\(broker.port)", "--device", "kiosk-7", "--fcm", "--fcm-token",
                "fcm-registration-token",
            ])
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(sent.stdout.contains("published the activity start of push-to-start-token to PUSH_RC/kiosk-7\n"))
        let expected =
            #"{"message":{"apns":{"headers":{"apns-priority":"10"},"live_activity_token":"push-to-start-token","#
            + #""payload":{"aps":{"alert":{"body":"test body","title":"test title"},"attributes":{"demoAttribute":1},"#
            + #""attributes-type":"DemoAttributes","content-state":{"demo":1},"event":"start","timestamp":1700000000}}}}}"#
        #expect(eventually { subscriber.pings == [expected] }, "\(subscriber.pings)")
        #expect(fixture.server.fcmMessages.count == 1)

        // A broker that is not there: exit 69, and the message says what did not go out.
        let down = try fixture.rcadmin([
            "activity", "end", "--live-activity-token", "t", "--mqtt",
            "mqtt://127.0.0.1:\(try MosquittoBroker.freePort())",
        ])
        #expect(down.status == 69, "\(down.stderr)")
        #expect(down.stderr.contains("cannot publish the activity end"), "\(down.stderr)")
    }

    @Test func refusalsSendNothing() throws {
        let fixture = try Fixture(seed: nil)
        let broker = try MosquittoBroker(in: fixture.sandbox)
        let subscriber = try RelayTests.Subscriber(broker, in: fixture.sandbox, topic: "PUSH_RC")
        let mqtt = ["--mqtt", "mqtt://127.0.0.1:\(broker.port)", "--fcm", "--fcm-token", "r"]
        let update = ["activity", "update", "--live-activity-token", "t"]
        let big = #"{"text":""# + String(repeating: "x", count: 4_100) + #""}"#
        let cases: [(arguments: [String], says: String)] = [
            (
                update + ["--content-state", big],
                "--content-state: bad message: message.apns.payload.aps.content-state: 4111 bytes, at most 4096"
            ),
            (
                ["activity", "start", "--live-activity-token", "t", "--attributes", "{}", "--content-state", "{}"],
                "--attributes-type: bad message: message.apns.payload.aps.attributes-type: required on start"
            ),
            (update + ["--content-state", #"{"a":1,}"#], "--content-state is not JSON: "),
            (update + ["--content-state", "[1]"], "--content-state must be a JSON object, got array"),
            (
                ["activity", "end", "--live-activity-token", "t", "--attributes", #"{"a":1}"#],
                "--attributes: bad message: message.apns.payload.aps.attributes: only a start carries them"
            ),
            (update, "--content-state: bad message: message.apns.payload.aps.content-state: missing"),
            (["activity", "end", "--content-state", "{}"], "activity end needs --live-activity-token T"),
            (
                ["activity", "end", "--live-activity-token", "a\u{1b}[2Jb"],
                "--live-activity-token: bad message: message.apns.live_activity_token: must be printable ASCII"
            ),
            (update + ["--content-state", "{}", "--priority", "1"], "--priority must be one of 5, 10, got '1'"),
            (update + ["--content-state", "{}", "--alert-body", "b"], "--alert-title and --alert-body go together"),
            // iOS shows no push-to-start without an alert: a start for FCM needs one.
            (
                [
                    "activity", "start", "--live-activity-token", "t", "--attributes-type", "A", "--attributes", "{}",
                    "--content-state", "{}",
                ], "activity start --fcm needs --alert-title TEXT and --alert-body TEXT"
            ),
            (
                update + ["--content-state", "{}", "--dismissal-date", "1"],
                "--dismissal-date: bad message: message.apns.payload.aps.dismissal-date: only an end carries it"
            ),
            (update + ["--content-state", "{}", "--timestamp", "1700000000000"], "--timestamp must be a whole number"),
        ]
        for (arguments, says) in cases {
            let result = try fixture.rcadmin(arguments + mqtt)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            #expect(result.stderr.hasPrefix("Error: \(says)"), "\(arguments): \(result.stderr)")
            #expect(!result.stderr.contains("\u{1b}"), "\(arguments): escaped")
            #expect(result.stdout.isEmpty, "\(arguments)")
        }
        // Destinations: one is needed, and the FCM half needs its token.
        for arguments in [
            update + ["--content-state", "{}"], update + ["--content-state", "{}", "--fcm"],
            update + ["--content-state", "{}", "--fcm-token", "r", "--dry-run"],
            update + ["--content-state", "{}", "--topic", "x", "--dry-run"],
        ] {
            let result = try fixture.rcadmin(arguments)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
        }
        // A last, good message proves the subscriber was listening all along: it is the only one.
        let good = try fixture.rcadmin(update + ["--content-state", "{}", "--mqtt", "mqtt://127.0.0.1:\(broker.port)"])
        #expect(good.status == 0, "\(good.stderr)")
        #expect(eventually { subscriber.pings.count == 1 }, "\(subscriber.pings)")
        #expect(
            subscriber.pings.count == 1 && subscriber.pings[0].contains(#""event":"update""#), "\(subscriber.pings)")
        #expect(fixture.server.fcmMessages.isEmpty && fixture.requests("oauth-token").isEmpty)
        let help = try fixture.rcadmin(["activity", "--help"])
        #expect(help.status == 0 && help.stdout.contains("Usage: rcadmin activity update --live-activity-token T"))
    }
}
