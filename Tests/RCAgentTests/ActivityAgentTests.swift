import RCCore
import RCStore
import RCSystem
import Testing

@testable import RCAgent

extension Agent {
    /// Whether the fetch loop has a deadline for `job`.
    fileprivate func isScheduled(_ job: FetchScheduler.Job) -> Bool { loop.scheduler.isScheduled(job) }
}

/// The agent's own part of Live Activities, on a real database: the socket's all-or-nothing
/// refusals against the push channels' "the stale ping still counts", the dismissal deadline in
/// the loop's scheduler, and what hooks get for activity events.
/// Time-limited: its async tests wait on gates, continuations or peers, and a hang must fail, not block CI.
@Suite(.timeLimit(.minutes(10))) struct ActivityAgentTests {
    static func message(_ json: String) throws -> PushMessage { try PushMessage.parse(try JSONValue.parse(json)) }

    static let start =
        #"{"apns":{"live_activity_token":"a1","payload":{"aps":{"event":"start","timestamp":10,"#
        + #""content-state":{"n":1},"attributes-type":"T","attributes":{}}}},"data":{"CONFIG_STATE":"STALE"}}"#
    static let updateFirst =
        #"{"apns":{"live_activity_token":"a2","payload":{"aps":{"event":"update","#
        + #""timestamp":10,"content-state":{"n":1}}}},"data":{"CONFIG_STATE":"STALE"}}"#

    @Test func theSocketRefusesAWholeMessageWhoseActivityCannotApply() async throws {
        try await withTestAgent { agent, _, read, _ in
            await #expect(
                throws: ControlError(.activityRefused, "refused: no activity a2: an update needs a start first")
            ) {
                try await agent.handle(try Self.message(Self.updateFirst), from: "socket", strict: true)
            }
            let store = try read()
            let stale = try store.status().stale.isSet
            let activities = try store.activities(now: .now())
            #expect(!stale, "nothing changed, the stale flag neither")
            #expect(activities.isEmpty)
        }
    }

    @Test func aPushChannelStillMarksStaleBesideARefusedActivity() async throws {
        try await withTestAgent { agent, _, read, _ in
            let response = try await agent.handle(try Self.message(Self.updateFirst), from: "mqtt PUSH_RC")
            #expect(response.activity == nil)
            guard case .markedStale = response.stale else {
                Issue.record("the CONFIG_STATE beside a refused activity still counts: \(response)")
                return
            }
            #expect(try read().status().stale.isSet)
        }
    }

    @Test func aStartAnswersWithTheActivityAndAnEndSetsTheDismissalDeadline() async throws {
        try await withTestAgent { agent, _, read, _ in
            let response = try await agent.handle(try Self.message(Self.start), from: "socket", strict: true)
            #expect(response.activity?.outcome == .started)
            #expect(response.activity?.activity?["contentState"] == .object([("n", .integer(1))]))
            #expect(await agent.isScheduled(.dismissal), "the device's own end, 8 h after the start")
            let end = #"{"apns":{"live_activity_token":"a1","payload":{"aps":{"event":"end","timestamp":11}}}}"#
            let ended = try await agent.handle(try Self.message(end), from: "socket", strict: true)
            #expect(ended.activity?.outcome == .ended)
            #expect(await agent.isScheduled(.dismissal), "removal 4 h after the end")
            #expect(try read().activity(id: "a1", now: .now())?.state == .ended)
        }
    }

    @Test func hooksGetTheActivityIdAndTheActivityOnStdin() throws {
        let detail: JSONValue = .object([
            ("activity", .object([("id", .string("a1")), ("alert", .object([("title", .string("Hi"))]))])),
            ("id", .string("a1")), ("reason", .string("dismissed")),
        ])
        let event = HookEvent(activity: .activityRemoved, detail: detail)
        #expect(event.environment()["RCAGENT_EVENT"] == "activity-removed")
        #expect(event.environment()["RCAGENT_ACTIVITY_ID"] == "a1")
        #expect(event.environment()["RCAGENT_CHANGED_KEYS"] == "", "set, for hooks written for config events")
        #expect(
            event.stdin
                == #"{"event":"activity-removed","id":"a1","activity":{"id":"a1","alert":{"title":"Hi"}},"reason":"dismissed"}"#
                + "\n")
        // A config event has no activity variable.
        #expect(HookEvent(kind: .staleSet).environment()["RCAGENT_ACTIVITY_ID"] == nil)
    }

    @Test func waitingActivityEventsFoldOnlyWithinOneActivityAndNeverReorder() {
        func event(_ kind: HookEvent.Kind, _ id: String, _ n: Int64) -> HookEvent {
            HookEvent(activity: kind, detail: .object([("contentState", .integer(n)), ("id", .string(id))]))
        }
        var pending: [HookEvent] = []
        HookEvent.queue(event(.activityUpdated, "a", 1), into: &pending)
        HookEvent.queue(event(.activityUpdated, "b", 1), into: &pending)
        HookEvent.queue(event(.activityUpdated, "a", 2), into: &pending)  // folds into a's update
        HookEvent.queue(event(.activityEnded, "a", 3), into: &pending)
        HookEvent.queue(event(.activityUpdated, "a", 4), into: &pending)  // after the end: not folded back
        HookEvent.queue(HookEvent(kind: .staleSet), into: &pending)
        HookEvent.queue(HookEvent(kind: .staleSet), into: &pending)
        #expect(
            pending.map { "\($0.kind.rawValue) \($0.activityId ?? "-")" } == [
                "activity-updated a", "activity-updated b", "activity-ended a", "activity-updated a", "stale-set -",
            ])
        #expect(pending[0].activityDetail?["contentState"] == .integer(2), "the latest content")
        #expect(pending[3].activityDetail?["contentState"] == .integer(4))
    }

    /// Hooks slower than a flood of new activity ids: the waiting events stay bounded, the oldest
    /// activity events go first, and the config's events stay.
    @Test func theHookQueueIsBoundedAndKeepsTheConfigEvents() {
        func started(_ id: Int) -> HookEvent {
            HookEvent(activity: .activityStarted, detail: .object([("id", .string("flood-\(id)"))]))
        }
        var pending: [HookEvent] = []
        HookEvent.queue(HookEvent(kind: .staleSet), into: &pending)
        var dropped = 0
        for id in 0..<1_000 where HookEvent.queue(started(id), into: &pending) { dropped += 1 }
        #expect(pending.count == HookEvent.maximumPending)
        #expect(dropped == 1_000 + 1 - HookEvent.maximumPending)
        #expect(pending.first?.kind == .staleSet, "the config event stays")
        #expect(pending.last?.activityId == "flood-999", "the newest are kept")
        #expect(pending[1].activityId == "flood-\(1_000 - HookEvent.maximumPending + 1)")
    }
}
