import RCCore
import Testing

/// The daemon's answers as both ends read and write them: the exact lines docs/protocol.md shows,
/// decode(encode(x)) == x, members a newer daemon adds ignored, wrong types refused by member name.
@Suite struct ControlResponseTests {
    func json(_ text: String) throws -> JSONValue { try JSONValue.parse(text) }

    /// Every response type with the wire text it must keep (scripts and tests read these names).
    static let wire: [(any ControlResponse, String)] = [
        (PingResponse(pid: 2442), #"{"ok":true,"pid":2442}"#),
        (
            StatusResponse(
                pid: 2442, state: "idle", nextFetchAt: "2026-11-29T14:00:00Z", push: nil, config: "9c1f0e4b2d7a6c35"),
            #"{"ok":true,"pid":2442,"state":"idle","nextFetchAt":"2026-11-29T14:00:00Z","push":null,"config":"9c1f0e4b2d7a6c35","report":null}"#
        ),
        (
            StatusResponse(
                pid: 7, state: "fetching", nextFetchAt: nil, push: "mqtt b:1883 connected", config: nil,
                report: "published 12:00:01 UTC to rcagent/status/d on b:1883"),
            #"{"ok":true,"pid":7,"state":"fetching","nextFetchAt":null,"push":"mqtt b:1883 connected","config":null,"report":"published 12:00:01 UTC to rcagent/status/d on b:1883"}"#
        ),
        (
            ReloadResponse(changed: ["Source.Path"], restartNeeded: [], warnings: ["x.conf:3: unknown key"]),
            #"{"ok":true,"changed":["Source.Path"],"restartNeeded":[],"warnings":["x.conf:3: unknown key"]}"#
        ),
        (FetchResponse.requested, #"{"ok":true,"outcome":"requested"}"#),
        (
            FetchResponse.updated(templateVersion: "8", changedKeys: ["k1", "k4"]),
            #"{"ok":true,"outcome":"updated","templateVersion":"8","activated":true,"changedKeys":["k1","k4"]}"#
        ),
        (
            FetchResponse.updated(templateVersion: nil, changedKeys: nil),
            #"{"ok":true,"outcome":"updated","templateVersion":null,"activated":false}"#
        ),
        (
            FetchResponse.updated(
                templateVersion: "9", changedKeys: nil,
                deferred: DeferredActivation(
                    templateVersion: "9", since: Timestamp(milliseconds: 1_764_640_800_000),
                    until: Timestamp(milliseconds: 1_764_644_400_000), why: .window)),
            #"{"ok":true,"outcome":"updated","templateVersion":"9","activated":false,"deferred":{"templateVersion":"9","since":"2025-12-02T02:00:00Z","until":"2025-12-02T03:00:00Z","why":"window"}}"#
        ),
        (FetchResponse.noChange, #"{"ok":true,"outcome":"no-change"}"#),
        (
            FetchResponse.skipped(reason: "not due", nextFetchAt: nil),
            #"{"ok":true,"outcome":"skipped","reason":"not due","nextFetchAt":null}"#
        ),
        (ActivateResponse.nothingToActivate, #"{"ok":true,"activated":false,"changedKeys":[]}"#),
        (
            ActivateResponse.activated(templateVersion: "9", changedKeys: ["a"]),
            #"{"ok":true,"activated":true,"templateVersion":"9","changedKeys":["a"]}"#
        ),
        (
            ActivateResponse.deferred(
                DeferredActivation(
                    templateVersion: "9", since: Timestamp(milliseconds: 1_764_640_800_000),
                    until: Timestamp(milliseconds: 1_764_644_400_000), why: .window)),
            #"{"ok":true,"activated":false,"changedKeys":[],"deferred":{"templateVersion":"9","since":"2025-12-02T02:00:00Z","until":"2025-12-02T03:00:00Z","why":"window"}}"#
        ),
        (
            ActivateResponse.deferred(
                DeferredActivation(
                    templateVersion: "9", since: Timestamp(milliseconds: 1_764_640_800_000), until: nil, why: .hold)),
            #"{"ok":true,"activated":false,"changedKeys":[],"deferred":{"templateVersion":"9","since":"2025-12-02T02:00:00Z","until":null,"why":"hold"}}"#
        ),
        (
            ActivateResponse.trialRunning(templateVersion: "9", deadline: Timestamp(milliseconds: 1_764_640_860_000)),
            #"{"ok":true,"activated":false,"changedKeys":[],"trial":{"templateVersion":"9","deadline":"2025-12-02T02:01:00Z"}}"#
        ),
        (MarkStaleResponse(newlySet: true), #"{"ok":true,"stale":true,"newlySet":true}"#),
        (
            MessageResponse.ignored("no CONFIG_STATE in data"),
            #"{"ok":true,"stale":false,"ignored":"no CONFIG_STATE in data"}"#
        ),
        (MessageResponse.markedStale(newlySet: false, fetch: nil), #"{"ok":true,"stale":true,"newlySet":false}"#),
        (
            MessageResponse.markedStale(newlySet: true, fetch: .success(.noChange)),
            #"{"ok":true,"stale":true,"newlySet":true,"fetch":{"ok":true,"outcome":"no-change"}}"#
        ),
        (
            MessageResponse.markedStale(newlySet: true, fetch: .failure(ControlError(.fetchFailed, "HTTP 500"))),
            #"{"ok":true,"stale":true,"newlySet":true,"fetch":{"ok":false,"error":{"code":"fetch-failed","message":"HTTP 500"}}}"#
        ),
        (
            MessageResponse.ignored(
                "no CONFIG_STATE in data",
                activity: ActivityResult(
                    outcome: .started, id: "order-42", activity: .object([("id", .string("order-42"))]))),
            #"{"ok":true,"stale":false,"ignored":"no CONFIG_STATE in data","activity":{"outcome":"started","id":"order-42","activity":{"id":"order-42"}}}"#
        ),
        (
            MessageResponse.markedStale(
                newlySet: true, fetch: nil, activity: ActivityResult(outcome: .ignored, id: "a", reason: "old")),
            #"{"ok":true,"stale":true,"newlySet":true,"activity":{"outcome":"ignored","id":"a","reason":"old"}}"#
        ),
        (WatchAck(), #"{"ok":true,"watching":true}"#),
        (
            RemoveActivityResponse(id: "order-42", activity: .object([("id", .string("order-42"))])),
            #"{"ok":true,"removed":"order-42","activity":{"id":"order-42"}}"#
        ),
    ]

    @Test func activateCarriesNowAndAnOlderClientsRequestMeansNotNow() throws {
        #expect(try ControlRequest.parse(Array(#"{"op":"activate"}"#.utf8)) == .activate(now: false))
        let request = try ControlRequest.parse(Array(#"{"op":"activate","now":true}"#.utf8))
        #expect(request == .activate(now: true))
        #expect(request.json.compactText == #"{"op":"activate","now":true}"#)
        #expect(request.changesState)
        #expect(throws: ControlError(.badRequest, #""now" must be true or false, got string"#)) {
            try ControlRequest.parse(Array(#"{"op":"activate","now":"yes"}"#.utf8))
        }
        // A push's data says so with "activate": "now", and nothing else does.
        #expect(PushMessage(data: ["activate": "now"]).activatesNow)
        #expect(!PushMessage(data: ["activate": "later"]).activatesNow)
        #expect(!PushMessage(data: ["CONFIG_STATE": "STALE"]).activatesNow)
    }

    @Test func theActivityRemoveRequestReadsBackAndChangesState() throws {
        let request = try ControlRequest.parse(Array(#"{"op":"activity-remove","id":"order-42"}"#.utf8))
        #expect(request == .removeActivity(id: "order-42"))
        #expect(request.json.compactText == #"{"op":"activity-remove","id":"order-42"}"#)
        #expect(request.changesState)
        #expect(throws: ControlError(.badRequest, #""activity-remove" op needs a string "id""#)) {
            try ControlRequest.parse(Array(#"{"op":"activity-remove","id":5}"#.utf8))
        }
    }

    @Test func eachResponseKeepsItsWireTextAndReadsBack() throws {
        func check<R: ControlResponse>(_ response: R, _ text: String) throws {
            #expect(response.json.compactText == text)
            #expect(try R.parse(json(text)) == response)
            #expect(try R.reply(json(text)) == .success(response))
        }
        for (response, text) in Self.wire { try check(response, text) }
    }

    @Test func membersANewerDaemonAddsAreIgnored() throws {
        let text = #"{"ok":true,"pid":1,"state":"idle","nextFetchAt":null,"push":null,"uptime":{"s":3}}"#
        #expect(
            try StatusResponse.parse(json(text))
                == StatusResponse(pid: 1, state: "idle", nextFetchAt: nil, push: nil, config: nil))
        // Absent optional members read as null.
        #expect(try StatusResponse.parse(json(#"{"ok":true,"pid":1,"state":"idle"}"#)).push == nil)
    }

    @Test(arguments: [
        ("status", #"{"ok":true,"pid":"1","state":"idle"}"#, "pid", "must be an integer, got string"),
        ("status", #"{"ok":true,"pid":1}"#, "state", "is missing"),
        ("status", #"{"ok":"yes"}"#, "ok", "must be true or false, got string"),
        ("fetch", #"{"ok":true,"outcome":"teleported"}"#, "outcome", "names no outcome (\"teleported\")"),
        (
            "fetch", #"{"ok":true,"outcome":"updated","activated":true,"changedKeys":["a",2]}"#, "changedKeys[1]",
            "must be a string, got number"
        ),
        (
            "message", #"{"ok":true,"stale":true,"newlySet":true,"fetch":{"ok":true,"outcome":5}}"#, "fetch.outcome",
            "must be a string, got number"
        ),
        (
            "message", #"{"ok":true,"stale":true,"newlySet":true,"fetch":[]}"#, "fetch",
            "must be a JSON object, got array"
        ),
        ("fetch", #"{"ok":false,"error":{"code":1,"message":"x"}}"#, "error.code", "must be a string, got number"),
        ("fetch", #"{"ok":false}"#, "error", "is missing"),
        ("status", #"[]"#, "", "must be a JSON object, got array"),
    ])
    func wrongTypesAreRefusedByMemberName(type: String, text: String, field: String, reason: String) throws {
        let value = try json(text)
        let error = #expect(throws: ControlResponseError.self) {
            switch type {
            case "status": _ = try StatusResponse.reply(value)
            case "fetch": _ = try FetchResponse.reply(value)
            default: _ = try MessageResponse.reply(value)
            }
        }
        #expect(error?.field == field)
        #expect(error?.reason == reason)
        #expect(error?.description.hasPrefix("invalid response: ") == true)
    }

    @Test func anErrorResponseReadsBackWithItsCode() throws {
        let storage = ControlError(.storage, "SQLite error 13: database or disk is full")
        #expect(
            storage.json.compactText
                == #"{"ok":false,"error":{"code":"storage","message":"SQLite error 13: database or disk is full"}}"#)
        #expect(try ControlError.parse(storage.json) == storage)
        #expect(try MarkStaleResponse.reply(storage.json) == .failure(storage))
        // A code from a newer daemon is kept, not refused.
        let newer = try ControlError.parse(json(#"{"ok":false,"error":{"code":"disk-on-fire","message":"x"}}"#))
        #expect(newer.code.rawValue == "disk-on-fire")
        #expect(throws: ControlResponseError.self) { try PingResponse.parse(storage.json) }
    }

    @Test func watchEventsKeepTheirFieldsInOrder() throws {
        let text = #"{"event":"activated","at":"2026-11-29T13:58:44Z","changedKeys":["k1"],"templateVersion":"8"}"#
        let event = try WatchEvent.parse(json(text))
        #expect(event.kind == "activated" && event.at == "2026-11-29T13:58:44Z")
        #expect(event.fields.map(\.key) == ["changedKeys", "templateVersion"])
        #expect(event.json.compactText == text)
        #expect(throws: ControlResponseError(field: "event", "must be a string, got number")) {
            try WatchEvent.parse(json(#"{"event":1,"at":"x"}"#))
        }
    }
}
