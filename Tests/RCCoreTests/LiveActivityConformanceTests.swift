import Testing

@testable import RCCore

/// The payload a backend sends to iPhones, sent as it is to a Linux device: Firebase's Live Activity
/// message (`message.apns.live_activity_token`, `apns-priority`) with an `aps` as Apple's ActivityKit
/// guide writes it, `relevance-score`, `input-push-token`, `sound` and a localized alert included.
@Suite struct LiveActivityConformanceTests {
    static let localizedAlert = """
        {
                  "title": {"loc-key": "%@ is on an adventure!", "loc-args": ["Power Panda"]},
                  "body": {"loc-key": "%@ found a sword!", "loc-args": ["Power Panda"]},
                  "sound": "chime.aiff"
                }
        """

    static let iPhoneStart = sample()

    static func sample(alert: String = localizedAlert, beside: String = "beside aps") -> String {
        """
        {"message": {
          "token": "FCM_TOKEN",
          "apns": {
            "live_activity_token": "LIVE_ACTIVITY_PUSH_TO_START_TOKEN",
            "headers": {"apns-priority": "10"},
            "payload": {
              "aps": {
                "timestamp": 1700000000,
                "event": "start",
                "content-state": {"currentHealthLevel": 100, "eventDescription": "Adventure has begun!"},
                "attributes-type": "AdventureAttributes",
                "attributes": {"currentHealthLevel": 100, "eventDescription": "Adventure has begun!"},
                "relevance-score": 75,
                "input-push-token": 1,
                "sound": "chime.aiff",
                "stale-date": 1700003600,
                "alert": \(alert),
                "some-future-member": {"apple": "adds it"}
              },
              "custom-key": "\(beside)"
            }
          }
        }}
        """
    }

    private func parse(_ text: String) throws -> LiveActivityMessage {
        try LiveActivityMessage.parse(try JSONValue.parse(text))
    }

    @Test func theIPhonePayloadIsAcceptedAndWhatTheDeviceUsesIsRead() throws {
        let start = try parse(Self.iPhoneStart)
        #expect(start.event == .start)
        #expect(start.token == "LIVE_ACTIVITY_PUSH_TO_START_TOKEN")
        #expect(start.attributesType == "AdventureAttributes")
        #expect(start.staleDate == 1_700_003_600)
        #expect(start.relevanceScore == 75)
        // No string tables on the device: the key is shown with its arguments in place.
        #expect(
            start.alert
                == .init(
                    title: "Power Panda is on an adventure!", body: "Power Panda found a sword!", sound: "chime.aiff"))
        // rcadmin checks what it sends with the same validator: it accepts the message it reads back.
        #expect(try start.validated() == start)
        #expect(
            LiveActivityRules.apply(start, to: nil, now: Timestamp(milliseconds: 1_700_000_000_000)).eventKind
                == .activityStarted)
    }

    @Test func aPlainStringAlertAndTheOlderLocKeysAreRead() throws {
        func alert(_ json: String) throws -> LiveActivityMessage.Alert? {
            try parse(Self.sample(alert: json)).alert
        }
        #expect(try alert(#""Order 42 is on its way""#) == .init(title: "Order 42 is on its way", body: ""))
        #expect(
            try alert(
                #"{"title-loc-key": "ORDER_%1$@", "title-loc-args": ["42"], "loc-key": "ETA %@ min", "loc-args": ["5"]}"#
            )
                == .init(title: "ORDER_42", body: "ETA 5 min"))
    }

    @Test func placeholdersAreFilledInOnePass() {
        #expect(LiveActivityMessage.substitute("%@ and %@", ["a", "b"]) == "a and b")
        #expect(LiveActivityMessage.substitute("%2$@ before %1$@", ["a", "b"]) == "b before a")
        #expect(LiveActivityMessage.substitute("100%% %@", ["sure"]) == "100% sure")
        // A missing argument shows as nothing; an argument's own % is not read again.
        #expect(LiveActivityMessage.substitute("%@ %@ %9$@", ["%@"]) == "%@  ")
        #expect(LiveActivityMessage.substitute("50% off %d", []) == "50% off %d")
        #expect(LiveActivityMessage.substitute("trailing %", []) == "trailing %")
    }

    @Test func theWholePayloadIsCheckedAgainstAPNsFourKilobytes() throws {
        // Content state and attributes each within their 4 KiB, together over the payload's.
        let half = String(repeating: "x", count: 2_500)
        let start = LiveActivityMessage(
            token: "big", event: .start, timestamp: 1_700_000_000, contentState: .object([("s", .string(half))]),
            attributesType: "T", attributes: .object([("s", .string(half))]))
        let error = #expect(throws: MessageError.self) { try start.validated() }
        #expect(error?.reason.hasPrefix("message.apns.payload: ") == true, "\(String(describing: error))")
        #expect(error?.reason.hasSuffix("bytes, at most 4096 (the APNs payload limit)") == true)
        // Members beside `aps` count too.
        #expect(throws: MessageError.self) { try parse(Self.sample(beside: String(repeating: "p", count: 4_000))) }
    }
}
