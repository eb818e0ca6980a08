import RCCore
import Testing

/// `LiveActivityRules.apply`: sequences of messages against a clock the tests set.
@Suite struct LiveActivityRulesTests {
    /// Device time of the first message; message timestamps are seconds around it.
    private let t0 = Timestamp(milliseconds: 1_700_000_000_000)
    private let s0: Int64 = 1_700_000_000

    private func start(_ ts: Int64, stale: Int64? = nil, type: String = "Delivery") -> LiveActivityMessage {
        LiveActivityMessage(
            token: "order-42", event: .start, timestamp: ts, contentState: .object([("eta", .integer(10))]),
            attributesType: type, attributes: .object([("order", .integer(42))]), staleDate: stale)
    }

    private func update(_ ts: Int64, eta: Int64 = 5, stale: Int64? = nil, alert: Bool = false) -> LiveActivityMessage {
        LiveActivityMessage(
            token: "order-42", event: .update, timestamp: ts, contentState: .object([("eta", .integer(eta))]),
            alert: alert ? .init(title: "Nearly there", body: "5 minutes") : nil, staleDate: stale)
    }

    private func end(_ ts: Int64, dismissal: Int64? = nil, content: Bool = true) -> LiveActivityMessage {
        LiveActivityMessage(
            token: "order-42", event: .end, timestamp: ts,
            contentState: content ? .object([("eta", .integer(0))]) : nil, dismissalDate: dismissal)
    }

    /// Applies `messages` in order, the clock one second later for each; returns every outcome.
    private func run(_ messages: [LiveActivityMessage], from existing: LiveActivity? = nil) -> [LiveActivityRules
        .Outcome]
    {
        var current = existing
        var outcomes: [LiveActivityRules.Outcome] = []
        for (i, message) in messages.enumerated() {
            let outcome = LiveActivityRules.apply(message, to: current, now: t0 + .seconds(i))
            outcomes.append(outcome)
            switch outcome {
            case .started(let a), .updated(let a), .ended(let a): current = a
            case .removed: current = nil
            case .ignored, .refused: break
            }
        }
        return outcomes
    }

    private func started(_ message: LiveActivityMessage) throws -> LiveActivity {
        guard case let .started(activity) = LiveActivityRules.apply(message, to: nil, now: t0) else {
            throw Failure("the start did not start")
        }
        return activity
    }

    struct Failure: Error { let reason: String; init(_ r: String) { reason = r } }

    @Test func aStartCreatesTheActivity() throws {
        let activity = try started(start(s0))
        #expect(activity.id == "order-42")
        #expect(activity.state == .active)
        #expect(activity.attributesType == "Delivery")
        #expect(activity.attributes == .object([("order", .integer(42))]))
        #expect(activity.contentState == .object([("eta", .integer(10))]))
        #expect(activity.timestamp == s0)
        #expect(activity.startedAt == t0 && activity.updatedAt == t0)
        #expect(activity.endedAt == nil && activity.staleAt == nil && activity.dismissAt == nil)
    }

    @Test func anUpdateReplacesTheContentAndKeepsTheAttributes() throws {
        let outcomes = run([start(s0), update(s0 + 1, eta: 3, alert: true)])
        guard case let .updated(activity) = outcomes[1] else { throw Failure("\(outcomes[1])") }
        #expect(activity.contentState == .object([("eta", .integer(3))]))
        #expect(activity.attributes == .object([("order", .integer(42))]))
        #expect(activity.alert?.title == "Nearly there")
        #expect(activity.timestamp == s0 + 1)
        #expect(activity.startedAt == t0 && activity.updatedAt == t0 + .seconds(1))
    }

    @Test func anUpdateWithoutAnAlertClearsTheLastOne() throws {
        let outcomes = run([start(s0), update(s0 + 1, alert: true), update(s0 + 2)])
        #expect(outcomes[2].activity?.alert == nil)
    }

    @Test func anUpdateBeforeTheStartIsRefused() {
        #expect(run([update(s0)]) == [.refused("no activity order-42: an update needs a start first")])
        #expect(run([end(s0)]) == [.refused("no activity order-42: an end needs a start first")])
    }

    @Test func outOfOrderTimestampsAreIgnored() {
        let outcomes = run([start(s0), update(s0 + 10, eta: 1), update(s0 + 5, eta: 7), update(s0 + 10, eta: 8)])
        #expect(
            outcomes[2]
                == .ignored("update for order-42: timestamp 1700000005 is not newer than the last applied 1700000010"))
        #expect(
            outcomes[3]
                == .ignored("update for order-42: timestamp 1700000010 is not newer than the last applied 1700000010"))
        // The first update's content is the one that stays.
        #expect(outcomes[1].activity?.contentState == .object([("eta", .integer(1))]))
    }

    @Test func aDuplicateStartIsIgnored() {
        let outcomes = run([start(s0), start(s0)])
        #expect(
            outcomes[1]
                == .ignored("start for order-42: timestamp 1700000000 is not newer than the last applied 1700000000"))
    }

    @Test func aNewerStartOfARunningActivityIsAnUpdate() throws {
        let outcomes = run([start(s0), start(s0 + 30)])
        guard case let .updated(activity) = outcomes[1] else { throw Failure("\(outcomes[1])") }
        #expect(activity.timestamp == s0 + 30)
        #expect(activity.startedAt == t0)
    }

    @Test func aStartOfAnotherTypeIsRefused() {
        let outcomes = run([start(s0), start(s0 + 1, type: "Flight")])
        #expect(
            outcomes[1]
                == .refused("start for order-42: attributes-type \"Flight\" differs from the activity's \"Delivery\""))
    }

    @Test func anEndSetsTheDismissalFourHoursLaterByDefault() throws {
        let outcomes = run([start(s0), end(s0 + 1)])
        guard case let .ended(activity) = outcomes[1] else { throw Failure("\(outcomes[1])") }
        #expect(activity.state == .ended)
        #expect(activity.endedAt == t0 + .seconds(1))
        #expect(activity.dismissAt == t0 + .seconds(1) + .seconds(4 * 3_600))
        #expect(activity.contentState == .object([("eta", .integer(0))]))
    }

    @Test func anEndWithAFutureDismissalDateKeepsItUntilThen() throws {
        let outcomes = run([start(s0), end(s0 + 1, dismissal: s0 + 600)])
        #expect(outcomes[1].activity?.dismissAt == t0 + .seconds(600))
        #expect(outcomes[1].eventKind == .activityEnded)
    }

    @Test func anEndWithAPastDismissalDateRemovesAtOnce() throws {
        // The clock reads t0 + 1 s when the end arrives; its dismissal date is t0 exactly: gone.
        let outcomes = run([start(s0), end(s0 + 1, dismissal: s0)])
        guard case let .removed(activity) = outcomes[1] else { throw Failure("\(outcomes[1])") }
        #expect(activity.endedAt == t0 + .seconds(1))
        #expect(outcomes[1].eventKind == .activityRemoved)
    }

    @Test func anEndWithoutContentKeepsTheLastContent() {
        let outcomes = run([start(s0), update(s0 + 1, eta: 2), end(s0 + 2, content: false)])
        #expect(outcomes[2].activity?.contentState == .object([("eta", .integer(2))]))
    }

    @Test func nothingButRemovalFollowsAnEnd() {
        let outcomes = run([start(s0), end(s0 + 1), update(s0 + 2), end(s0 + 3)])
        let ended = "the activity ended at 2023-11-14T22:13:21Z"
        #expect(outcomes[2] == .ignored("update for order-42: \(ended)"))
        #expect(outcomes[3] == .ignored("end for order-42: \(ended)"))
    }

    @Test func aNewerStartAfterAnEndStartsAfresh() throws {
        let outcomes = run([start(s0), end(s0 + 1), start(s0 + 2)])
        guard case let .started(activity) = outcomes[2] else { throw Failure("\(outcomes[2])") }
        #expect(activity.state == .active)
        #expect(activity.startedAt == t0 + .seconds(2))
        #expect(activity.endedAt == nil && activity.dismissAt == nil)
        // A replayed start (not newer) does not revive it.
        #expect(run([start(s0), end(s0 + 1), start(s0 + 1)])[2].activity == nil)
    }

    @Test func theStateTurnsStaleAtTheStaleDate() throws {
        let activity = try started(start(s0, stale: s0 + 60))
        #expect(activity.staleAt == t0 + .seconds(60))
        #expect(activity.at(t0 + .seconds(59)).state == .active)
        #expect(activity.at(t0 + .seconds(60)).state == .stale)
        // Started already past its stale date: stale from the start.
        #expect(LiveActivityRules.apply(start(s0, stale: s0 - 1), to: nil, now: t0).activity?.state == .stale)
    }

    @Test func anUpdateReplacesTheStaleDate() throws {
        let outcomes = run([start(s0, stale: s0 + 1), update(s0 + 5, stale: s0 + 600)])
        #expect(outcomes[1].activity?.staleAt == t0 + .seconds(600))
        #expect(outcomes[1].activity?.state == .active)
        let cleared = run([start(s0, stale: s0 + 1), update(s0 + 5)])
        #expect(cleared[1].activity?.staleAt == nil)
    }

    @Test func anEndedActivityIsEndedNotStale() throws {
        let outcomes = run([start(s0, stale: s0 + 1), end(s0 + 2)])
        let ended = try #require(outcomes[1].activity)
        #expect(ended.at(t0 + .seconds(3_600)).state == .ended)
    }

    @Test func theListItemHasEveryFieldInISO8601() throws {
        let outcomes = run([start(s0, stale: s0 + 60), update(s0 + 1, alert: true), end(s0 + 2, dismissal: s0 + 600)])
        let json = try #require(outcomes[2].activity?.json)
        #expect(
            json.compactText
                == #"{"alert":null,"attributes":{"order":42},"attributesType":"Delivery","contentState":{"eta":0},"#
                + #""dismissAt":"2023-11-14T22:23:20Z","endedAt":"2023-11-14T22:13:22Z","id":"order-42","#
                + #""staleAt":null,"startedAt":"2023-11-14T22:13:20Z","state":"ended","timestamp":1700000002,"#
                + #""updatedAt":"2023-11-14T22:13:22Z"}"#)
        let withAlert = try #require(outcomes[1].activity?.json)
        #expect(withAlert["alert"] == .object([("body", .string("5 minutes")), ("title", .string("Nearly there"))]))
        #expect(withAlert["staleAt"] == .null)
        #expect(withAlert["endedAt"] == .null)
    }

    @Test func aMessageRebuiltAndReparsedAppliesTheSame() throws {
        let message = try LiveActivityMessage.parse(start(s0, stale: s0 + 60).json)
        #expect(
            LiveActivityRules.apply(message, to: nil, now: t0)
                == LiveActivityRules.apply(start(s0, stale: s0 + 60), to: nil, now: t0))
    }
}
