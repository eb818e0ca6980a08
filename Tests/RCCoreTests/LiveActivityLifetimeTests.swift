import RCCore
import Testing

/// The device's own clock rules for Live Activities (ActivityKit's): a timestamp more than 24 h ahead
/// is refused, an activity ends 8 h after its start and goes 4 h after its end, and no dismissal date
/// keeps it longer. The clock is injected.
@Suite struct LiveActivityLifetimeTests {
    private let t0 = Timestamp(milliseconds: 1_700_000_000_000)
    private let s0: Int64 = 1_700_000_000
    private let hour: Int64 = 3_600

    struct Failure: Error { let reason: String; init(_ r: String) { reason = r } }

    private func start(_ ts: Int64, id: String = "order-42") -> LiveActivityMessage {
        LiveActivityMessage(
            token: id, event: .start, timestamp: ts, contentState: .object([("eta", .integer(10))]),
            attributesType: "Delivery", attributes: .object([("order", .integer(42))]))
    }

    private func started(at now: Timestamp) throws -> LiveActivity {
        guard case let .started(activity) = LiveActivityRules.apply(start(s0), to: nil, now: now) else {
            throw Failure("the start did not start")
        }
        return activity
    }

    @Test func aTimestampMoreThanADayAheadIsRefusedAndOneADayAheadIsNot() throws {
        let farAhead = start(s0 + 24 * hour + 1)
        guard case let .refused(reason) = LiveActivityRules.apply(farAhead, to: nil, now: t0) else {
            throw Failure("a start dated a day and a second ahead was not refused")
        }
        #expect(reason.contains("more than 24 h ahead of the device clock"), "\(reason)")
        #expect(LiveActivityRules.apply(start(s0 + 24 * hour), to: nil, now: t0).eventKind == .activityStarted)
        // The year-9999 start that froze an activity for good: refused for an existing one too.
        let existing = try started(at: t0)
        let frozen = start(LiveActivityMessage.maximumSeconds)
        guard case .refused = LiveActivityRules.apply(frozen, to: existing, now: t0 + .seconds(1)) else {
            throw Failure("a far-future message applied to a running activity")
        }
    }

    @Test func anActivityRunsEightHoursThenEndsAsIfAnEndCame() throws {
        let activity = try started(at: t0)
        #expect(LiveActivityRules.deadline(of: activity) == t0 + .seconds(8 * hour))
        #expect(LiveActivityRules.expire(activity, now: t0 + .seconds(8 * hour - 1)) == nil)
        guard case let .ended(ended)? = LiveActivityRules.expire(activity, now: t0 + .seconds(8 * hour)) else {
            throw Failure("not ended at 8 h")
        }
        #expect(ended.state == .ended)
        #expect(ended.endedAt == t0 + .seconds(8 * hour))
        #expect(ended.dismissAt == t0 + .seconds(12 * hour))
        #expect(LiveActivityRules.deadline(of: ended) == t0 + .seconds(12 * hour))
        // Once ended it is not ended again.
        #expect(LiveActivityRules.expire(ended, now: t0 + .seconds(9 * hour)) == nil)
    }

    @Test func aDaemonBackAfterTwelveHoursRemovesTheActivityAtOnce() throws {
        let activity = try started(at: t0)
        // Ended at its 8 h mark, not when the daemon got to it: so its 4 h are over too.
        guard case let .removed(gone)? = LiveActivityRules.expire(activity, now: t0 + .seconds(12 * hour)) else {
            throw Failure("not removed after 12 h")
        }
        #expect(gone.endedAt == t0 + .seconds(8 * hour))
        guard case .ended? = LiveActivityRules.expire(activity, now: t0 + .seconds(10 * hour)) else {
            throw Failure("not ended after 10 h")
        }
    }

    @Test func aDismissalDateIsCappedAtFourHoursAfterTheEnd() throws {
        let activity = try started(at: t0)
        let end = LiveActivityMessage(
            token: "order-42", event: .end, timestamp: s0 + 1, contentState: nil,
            dismissalDate: LiveActivityMessage.maximumSeconds)
        let endedAt = t0 + .seconds(1)
        let outcome = LiveActivityRules.apply(end, to: activity, now: endedAt)
        #expect(outcome.eventKind == .activityEnded)
        #expect(outcome.activity?.dismissAt == endedAt + .seconds(4 * hour))
        // A stored date beyond the cap (an older release kept any) does not hold the removal back.
        var stored = try #require(outcome.activity)
        stored.dismissAt = Timestamp(milliseconds: LiveActivityMessage.maximumSeconds * 1_000)
        #expect(LiveActivityRules.deadline(of: stored) == endedAt + .seconds(4 * hour))
    }
}
