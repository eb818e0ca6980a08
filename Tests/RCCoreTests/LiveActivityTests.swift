import RCCore
import Testing

/// Live Activity messages as FCM's HTTP v1 documentation shows them, with the placeholders filled in.
/// (The documented start sample has a trailing comma after `"demoAttribute": 1`, which JSON does not
/// allow; it is left out here.)
enum FCMSamples {
    static let start = """
        {"message":{
            "token": "fcm-registration-token",
            "apns":{
              "live_activity_token": "push-to-start-token",
              "headers":{"apns-priority": "10"},
              "payload":{"aps": {
                  "timestamp": 1700000000,
                  "event": "start",
                  "content-state": {"demo": 1},
                  "attributes-type": "DemoAttributes",
                  "attributes": {"demoAttribute": 1},
                  "alert": {"title": "test title", "body": "test body"}
              }}
            }
        }}
        """
    static let update = """
        {"message":{
            "token": "fcm-registration-token",
            "apns":{
              "live_activity_token": "push-to-start-token",
              "headers":{"apns-priority": "10"},
              "payload":{"aps": {
                  "timestamp": 1700000060,
                  "event": "update",
                  "content-state": {"test1": 100, "test2": "demo"},
                  "alert": {"title": "test title", "body": "test body"}
              }}
            }
        }}
        """
    static let end = """
        {"message":{
            "token": "fcm-registration-token",
            "apns":{
              "live_activity_token": "push-to-start-token",
              "headers":{"apns-priority": "10"},
              "payload":{"aps": {
                  "timestamp": 1700000120,
                  "dismissal-date": 1700003600,
                  "event": "end",
                  "content-state": {"test1": 100, "test2": "demo"},
                  "alert": {"title": "test title", "body": "test body"}
              }}
            }
        }}
        """
}

/// Parsing and validating Live Activity messages.
@Suite struct LiveActivityMessageTests {
    private func parse(_ text: String) throws -> LiveActivityMessage {
        try LiveActivityMessage.parse(try JSONValue.parse(text))
    }

    /// A minimal message body with `aps` members replaced or added (`nil` removes one).
    private func message(
        _ aps: [String: JSONValue?] = [:], token: JSONValue = .string("act-1"), priority: JSONValue? = .string("5"),
        envelope: Bool = true
    ) -> JSONValue {
        var members: [String: JSONValue] = [
            "event": .string("update"), "timestamp": .integer(1_700_000_000),
            "content-state": .object([("n", .integer(1))]),
        ]
        for (key, value) in aps { members[key] = value }
        let apsJSON = JSONValue.object(members.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        var apns: [(key: String, value: JSONValue)] = []
        if let priority { apns.append(("headers", .object([("apns-priority", priority)]))) }
        apns.append(("live_activity_token", token))
        apns.append(("payload", .object([("aps", apsJSON)])))
        let body = JSONValue.object([("apns", .object(apns))])
        return envelope ? .object([("message", body)]) : body
    }

    private func refusal(_ json: JSONValue) -> String? {
        do {
            _ = try LiveActivityMessage.parse(json)
            return nil
        } catch {
            return error.description
        }
    }

    @Test func theDocumentedStartIsAccepted() throws {
        let start = try parse(FCMSamples.start)
        #expect(start.token == "push-to-start-token")
        #expect(start.priority == 10)
        #expect(start.event == .start)
        #expect(start.timestamp == 1_700_000_000)
        #expect(start.contentState == .object([("demo", .integer(1))]))
        #expect(start.attributesType == "DemoAttributes")
        #expect(start.attributes == .object([("demoAttribute", .integer(1))]))
        #expect(start.alert == .init(title: "test title", body: "test body"))
        #expect(start.fcmToken == "fcm-registration-token")
        #expect(start.dismissalDate == nil && start.staleDate == nil)
    }

    @Test func theDocumentedUpdateAndEndAreAccepted() throws {
        let update = try parse(FCMSamples.update)
        #expect(update.event == .update)
        #expect(update.contentState?["test2"] == .string("demo"))
        let end = try parse(FCMSamples.end)
        #expect(end.event == .end)
        #expect(end.dismissalDate == 1_700_003_600)
    }

    @Test(arguments: [FCMSamples.start, FCMSamples.update, FCMSamples.end])
    func theCanonicalMessageReadsBackTheSame(sample: String) throws {
        let parsed = try parse(sample)
        #expect(try LiveActivityMessage.parse(parsed.json) == parsed)
        #expect(parsed.json["message"]?["apns"]?["headers"]?["apns-priority"] == .string("10"))
    }

    @Test func theEnvelopeIsOptionalAndPathsFollowIt() throws {
        let bare = try LiveActivityMessage.parse(message(envelope: false))
        #expect(bare.token == "act-1")
        #expect(bare.priority == 5)
        #expect(
            refusal(message(["event": .string("pause")], envelope: false))
                == "bad message: apns.payload.aps.event: must be start, update or end, got \"pause\"")
    }

    @Test func aMissingPriorityIsAPNsDefaultTen() throws {
        #expect(try LiveActivityMessage.parse(message(priority: nil)).priority == 10)
    }

    @Test func integralDoublesAreWholeSeconds() throws {
        let parsed = try LiveActivityMessage.parse(message(["timestamp": .double(1_700_000_000)]))
        #expect(parsed.timestamp == 1_700_000_000)
    }

    @Test func contentStateSizeIsCountedOnCompactJSON() throws {
        // {"s":"…"} is 8 bytes around the string: 4088 characters make exactly 4096.
        let exact = JSONValue.object([("s", .string(String(repeating: "x", count: 4_088)))])
        // Exactly 4096 bytes pass the content-state check; the payload around them is then over APNs' 4096.
        #expect(refusal(message(["content-state": exact]))?.hasPrefix("bad message: message.apns.payload: ") == true)
        let fits = JSONValue.object([("s", .string(String(repeating: "x", count: 3_900)))])
        #expect(try LiveActivityMessage.parse(message(["content-state": fits])).contentState == fits)
        let over = JSONValue.object([("s", .string(String(repeating: "x", count: 5_004)))])
        #expect(
            refusal(message(["content-state": over]))
                == "bad message: message.apns.payload.aps.content-state: 5012 bytes, at most 4096")
    }

    @Test func anEndMayKeepTheLastContent() throws {
        let end = try LiveActivityMessage.parse(message(["event": .string("end"), "content-state": nil]))
        #expect(end.contentState == nil)
        #expect(try LiveActivityMessage.parse(end.json) == end)
    }

    @Test func aStaleDateAndARelevanceScoreAreKept() throws {
        let parsed = try LiveActivityMessage.parse(
            message(["stale-date": .integer(1_700_000_600), "relevance-score": .double(0.5)]))
        #expect(parsed.staleDate == 1_700_000_600)
        #expect(parsed.relevanceScore == 0.5)
        #expect(try LiveActivityMessage.parse(parsed.json) == parsed)
    }

    @Test func aDataMessageWithAnAPNsBlockIsNoLiveActivity() throws {
        // What rcadmin's stale ping sends: data plus a background push at priority 5.
        let ping = try JSONValue.parse(
            """
            {"message":{"data":{"CONFIG_STATE":"STALE"},"apns":{"headers":{"apns-priority":"5"},
            "payload":{"aps":{"content-available":1}}}}}
            """)
        let parsed = try PushMessage.parse(ping)
        #expect(parsed.marksStale)
        #expect(parsed.liveActivity == nil)
    }

    @Test func aPushMessageCarriesTheParsedActivity() throws {
        let parsed = try PushMessage.parse(try JSONValue.parse(FCMSamples.start))
        #expect(parsed.liveActivity == .success(try parse(FCMSamples.start)))
        #expect(!parsed.marksStale)
    }

    @Test func aBadActivityDoesNotRefuseTheDataNextToIt() throws {
        var json = message(["event": .string("pause")])
        if case var .object(outer) = json, case var .object(body) = outer[0].value {
            body.append(("data", .object([("CONFIG_STATE", .string("STALE"))])))
            outer[0].value = .object(body)
            json = .object(outer)
        }
        let parsed = try PushMessage.parse(json)
        #expect(parsed.marksStale)
        #expect(
            parsed.liveActivity
                == .failure(
                    MessageError("message.apns.payload.aps.event: must be start, update or end, got \"pause\"")))
    }

    @Test func aBareActivityTokenIsEnoughToBeAnActivity() throws {
        let parsed = try PushMessage.parse(try JSONValue.parse(#"{"apns":{"live_activity_token":"a"}}"#))
        #expect(parsed.liveActivity == .failure(MessageError("apns.payload: missing")))
    }

    // MARK: - Refusals, each with its message

    static let refusals: [(aps: [String: JSONValue?], reason: String?)] = [
        (["event": nil], "message.apns.payload.aps.event: missing"),
        (["event": .integer(1)], "message.apns.payload.aps.event: must be a string, got number"),
        (["event": .string("START")], "message.apns.payload.aps.event: must be start, update or end, got \"START\""),
        (["timestamp": nil], "message.apns.payload.aps.timestamp: missing"),
        (
            ["timestamp": .string("1700000000")],
            "message.apns.payload.aps.timestamp: must be a number of seconds, got string"
        ),
        (
            ["timestamp": .double(1_700_000_000.5)],
            "message.apns.payload.aps.timestamp: must be whole seconds, got 1700000000.5"
        ),
        (["timestamp": .integer(-1)], "message.apns.payload.aps.timestamp: must not be negative, got -1"),
        (
            ["timestamp": .integer(1_700_000_000_000)],
            "message.apns.payload.aps.timestamp: 1700000000000 is after year 9999 (milliseconds instead of seconds?)"
        ),
        (
            ["timestamp": .double(1e300)],
            "message.apns.payload.aps.timestamp: 1e+300 is after year 9999 (milliseconds instead of seconds?)"
        ),
        (["timestamp": .double(-1e300)], "message.apns.payload.aps.timestamp: must not be negative, got -1e+300"),
        (["timestamp": .double(-0.0)], nil),
        (["content-state": nil], "message.apns.payload.aps.content-state: missing"),
        (["content-state": .array([])], "message.apns.payload.aps.content-state: must be an object, got array"),
        (["attributes-type": .string("T")], "message.apns.payload.aps.attributes-type: only a start carries it"),
        (["attributes": .object([])], "message.apns.payload.aps.attributes: only a start carries them"),
        (["event": .string("start")], "message.apns.payload.aps.attributes-type: required on start"),
        (
            ["event": .string("start"), "attributes-type": .string("T")],
            "message.apns.payload.aps.attributes: required on start"
        ),
        (
            ["event": .string("start"), "attributes-type": .string(""), "attributes": .object([])],
            "message.apns.payload.aps.attributes-type: must not be empty"
        ),
        (
            ["event": .string("start"), "attributes-type": .string("T"), "attributes": .string("{}")],
            "message.apns.payload.aps.attributes: must be an object, got string"
        ),
        (["alert": .integer(1)], "message.apns.payload.aps.alert: must be an object or a string, got number"),
        (["alert": .object([("body", .string("b"))])], "message.apns.payload.aps.alert.title: missing"),
        (["alert": .object([("title", .string("t"))])], "message.apns.payload.aps.alert.body: missing"),
        (
            ["alert": .object([("body", .string("b")), ("title", .object([("loc-args", .array([]))]))])],
            "message.apns.payload.aps.alert.title.loc-key: missing"
        ),
        (
            [
                "alert": .object([
                    ("body", .object([("loc-args", .string("x")), ("loc-key", .string("k"))])), ("title", .string("t")),
                ])
            ],
            "message.apns.payload.aps.alert.body.loc-args: must be an array, got string"
        ),
        (
            ["alert": .object([("body", .string("b")), ("title", .string(String(repeating: "t", count: 1_025)))])],
            "message.apns.payload.aps.alert.title: 1025 bytes, at most 1024"
        ),
        (
            ["dismissal-date": .integer(1_700_000_000)],
            "message.apns.payload.aps.dismissal-date: only an end carries it"
        ),
        (["stale-date": .double(1.5)], "message.apns.payload.aps.stale-date: must be whole seconds, got 1.5"),
        // Members the device does not use are accepted and ignored, whatever their type.
        (["content_state": .object([])], nil),
        (["relevance-score": .string("1")], nil),
        (["sound": .object([("critical", .integer(1))])], nil),
        (["input-push-token": .integer(1)], nil),
        (["alert": .object([("body", .string("b")), ("subtitle", .string("s")), ("title", .string("t"))])], nil),
    ]

    @Test(arguments: refusals.indices)
    func everyRefusalNamesItsField(index: Int) {
        let (aps, reason) = Self.refusals[index]
        #expect(refusal(message(aps)) == reason.map { "bad message: " + $0 })
    }

    @Test func theTokenIsANonEmptyBoundedPrintableWord() {
        #expect(
            refusal(message(token: .string(""))) == "bad message: message.apns.live_activity_token: must not be empty")
        #expect(
            refusal(message(token: .integer(5)))
                == "bad message: message.apns.live_activity_token: must be a string, got number")
        #expect(
            refusal(message(token: .string("a b")))
                == "bad message: message.apns.live_activity_token: must be printable ASCII without spaces, got \"a b\" (U+0020)"
        )
        // The offending token is quoted escaped: no raw ESC reaches the terminal that shows the error.
        #expect(
            refusal(message(token: .string("a\u{1b}[2Jb")))
                == "bad message: message.apns.live_activity_token: must be printable ASCII without spaces, got \"a\\x1b[2Jb\" (U+001B)"
        )
        #expect(
            refusal(message(token: .string("é")))
                == "bad message: message.apns.live_activity_token: must be printable ASCII without spaces, got \"é\" (U+00E9)"
        )
        #expect(
            refusal(message(token: .string(String(repeating: "a", count: 257))))
                == "bad message: message.apns.live_activity_token: 257 bytes, at most 256")
        #expect(throws: Never.self) {
            try LiveActivityMessage.parse(message(token: .string(String(repeating: "a", count: 256))))
        }
    }

    @Test func thePriorityIsFiveOrTen() {
        #expect(
            refusal(message(priority: .string("1")))
                == "bad message: message.apns.headers.apns-priority: must be \"5\" or \"10\", got \"1\"")
        #expect(
            refusal(message(priority: .integer(10)))
                == "bad message: message.apns.headers.apns-priority: must be a string, got number")
    }

    @Test func theStructureIsChecked() throws {
        #expect(refusal(.array([])) == "bad message: a message must be a JSON object, got array")
        #expect(refusal(.object([("message", .string("x"))])) == "bad message: message: must be an object, got string")
        #expect(refusal(.object([("message", .object([]))])) == "bad message: message.apns: missing")
        #expect(
            refusal(try JSONValue.parse(#"{"apns":{"live_activity_token":"a","payload":{}}}"#))
                == "bad message: apns.payload.aps: missing")
        #expect(
            refusal(try JSONValue.parse(#"{"apns":{"live_activity_token":"a","payload":{"aps":[]}}}"#))
                == "bad message: apns.payload.aps: must be an object, got array")
    }

    @Test func aBuiltMessageIsValidatedAsTheAgentWill() throws {
        let built = LiveActivityMessage(
            token: "order-42", priority: 5, event: .update, timestamp: 1_700_000_000,
            contentState: .object([("eta", .integer(3))]), fcmToken: "fcm-token")
        #expect(try built.validated() == built)
        var bad = built
        bad.token = "order 42"
        #expect(throws: MessageError.self) { try bad.validated() }
        bad = built
        bad.attributesType = "Delivery"
        #expect(
            (try? bad.validated()) == nil
                && (bad.json["message"]?["apns"]?["payload"]?["aps"]?["attributes-type"]) == .string("Delivery"))
        bad = built
        bad.priority = 7
        #expect(throws: MessageError("message.apns.headers.apns-priority: must be \"5\" or \"10\", got \"7\"")) {
            try bad.validated()
        }
    }

    @Test func anUnknownMemberIsAcceptedWhateverItsName() throws {
        // Apple adds `aps` members; a device that refused them would refuse the payload iPhones get.
        let parsed = try LiveActivityMessage.parse(message(["x\ny": .integer(1), "content_state": .object([])]))
        #expect(parsed.contentState == .object([("n", .integer(1))]))
    }
}
