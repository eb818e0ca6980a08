import RCCore
import RCStore
import RCSystem

/// Live Activities: the agent applies every activity message, whatever channel brought it, through
/// the store (the rules, the row and the event in one transaction), tells watchers and hooks, and
/// ends activities 8 h after their start and removes ended ones at their dismissal date with a
/// deadline of its loop, scheduled from the store (so it survives restarts).
extension Agent {
    /// Applies the Live Activity `message` carries, if any. A message that is not a valid activity,
    /// or one the rules refuse, changes nothing; with `strict` (the control socket, whose sender
    /// hears the answer) it throws a ``ControlError`` naming what is wrong, else (push channels,
    /// which nobody answers) it is logged and `nil` is returned, so the message's `CONFIG_STATE`
    /// still counts. A store failure throws either way.
    func applyActivity(of message: PushMessage, from channel: String, strict: Bool) throws -> ActivityResult? {
        switch message.liveActivity {
        case nil:
            return nil
        case let .failure(error)?:
            log.warning("Refusing a live activity message from \(channel): \(error.reason)")
            if strict { throw ControlError(.badMessage, error.description) }
            return nil
        case let .success(activity)?:
            let outcome = try applyActivity(activity, from: channel)
            if case let .refused(reason) = outcome {
                if strict { throw ControlError(.activityRefused, "refused: \(reason)") }
                return nil
            }
            return ActivityResult(outcome, id: activity.token)
        }
    }

    /// Applies one activity message and logs one line for it (refusals and ignored ones included:
    /// an operator wondering why a kiosk did not change finds the reason in the journal).
    func applyActivity(_ message: LiveActivityMessage, from channel: String) throws -> LiveActivityRules.Outcome {
        let outcome = try writer.applyActivity(message, at: .now())
        let what = "\(message.event.rawValue) for activity \(message.token) from \(channel)"
        switch outcome {
        case .started, .updated, .ended, .removed:
            log.info(
                "Live activity \(message.token) \(ActivityResult(outcome, id: message.token).outcome.rawValue) "
                    + "(\(message.event.rawValue), timestamp \(message.timestamp), from \(channel))")
            // An end sets a dismissal date; any change may have moved the earliest one. The loop
            // may be waiting for an older deadline: it takes its wait again.
            scheduleDismissal()
            inbox.send(.rescheduled)
        case let .ignored(reason):
            log.info("Ignoring the \(what): \(reason)")
        case let .refused(reason):
            log.warning("Refusing the \(what): \(reason)")
        }
        return outcome
    }

    /// Sets the loop's activity deadline to the earliest step the device takes on its own (an end 8 h
    /// after a start, a removal at a dismissal date; at once when it has passed), or clears it when
    /// no activity is stored: the idle daemon wakes only when one is due. The times are wall-clock
    /// and the loop's deadlines monotonic: a clock step calls this again (``afterSystemChange``).
    func scheduleDismissal() {
        let next: Timestamp?
        do { next = try writer.store.nextActivityDeadline() } catch {
            log.error("Failed to read the next activity deadline: \(error); retrying in \(FetchLoop.storeRetry)")
            loop.scheduler.schedule(.dismissal, at: .now + FetchLoop.storeRetry)
            return
        }
        guard let next else {
            loop.scheduler.cancel(.dismissal)
            return
        }
        let delay = max(next - Timestamp.now(), .zero)
        loop.scheduler.schedule(.dismissal, at: .now + delay)
    }

    /// Ends the activities running for 8 hours and removes the ended ones whose dismissal date has
    /// come (their `activity-ended`/`-removed` events reach watchers and hooks), then sets the
    /// deadline for the next one.
    func removeDismissedActivities() {
        do {
            let expiry = try writer.expireActivities(at: .now())
            for id in expiry.ended { log.info("Live activity \(id) ended (8 h after its start)") }
            for id in expiry.removed { log.info("Live activity \(id) removed (its dismissal date came)") }
        } catch {
            // A full or read-only disk: the rows stay listed a little longer, and the next try comes.
            log.error("Failed to expire live activities: \(error); retrying in \(FetchLoop.storeRetry)")
            loop.scheduler.schedule(.dismissal, at: .now + FetchLoop.storeRetry)
            return
        }
        scheduleDismissal()
    }

    /// Removes the activity `id` at once (`rcagent activity remove`): its `activity-removed` event
    /// reaches watchers and hooks. Throws ``ControlError`` `no-such-activity` when there is none.
    func removeActivity(id: String) throws -> LiveActivity {
        guard let removed = try writer.removeActivity(id: id, at: .now(), reason: "removed on request") else {
            throw ControlError(.noSuchActivity, "no activity \"\(TextEscaping.snippet(id, maxBytes: 64))\"")
        }
        log.notice("Live activity \(TextEscaping.logLine(id)) removed on request (rcagent activity remove)")
        scheduleDismissal()
        inbox.send(.rescheduled)
        return removed
    }
}

extension ActivityResult {
    /// The answer's view of an outcome (a refusal never gets here: it is an error answer).
    init(_ outcome: LiveActivityRules.Outcome, id: String) {
        switch outcome {
        case let .started(activity): self = ActivityResult(outcome: .started, id: id, activity: activity.json)
        case let .updated(activity): self = ActivityResult(outcome: .updated, id: id, activity: activity.json)
        case let .ended(activity): self = ActivityResult(outcome: .ended, id: id, activity: activity.json)
        case let .removed(activity): self = ActivityResult(outcome: .removed, id: id, activity: activity.json)
        case let .ignored(reason), let .refused(reason):
            self = ActivityResult(outcome: .ignored, id: id, reason: reason)
        }
    }
}
