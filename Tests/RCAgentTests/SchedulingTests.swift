import RCCore
import RCSystem
import Testing

@testable import RCAgent

/// The agent's inbox: one consumer, senders on any thread, waits with a deadline.
/// Time-limited: its async tests wait on gates, continuations or peers, and a hang must fail, not block CI.
@Suite(.timeLimit(.minutes(10))) struct InboxTests {
    @Test func elementsArriveInTheOrderTheyWereSentFromEachThread() async {
        let inbox = Inbox<(thread: Int, index: Int)>()
        let senders = 4
        let each = 500
        for thread in 0..<senders {
            // Threads, as a real daemon's senders are (C callbacks, connection threads).
            #expect(DetachedThread.start { for index in 0..<each { inbox.send((thread, index)) } })
        }
        var last = [Int](repeating: -1, count: senders)
        for _ in 0..<(senders * each) {
            guard let (thread, index) = await inbox.next() else {
                Issue.record("the inbox ended early")
                return
            }
            #expect(index == last[thread] + 1, "thread \(thread): \(index) after \(last[thread])")
            last[thread] = index
        }
        #expect(inbox.poll() == nil)
    }

    @Test func aWaitEndsAtItsDeadlineWithNothing() async {
        let inbox = Inbox<Int>()
        let clock = ContinuousClock()
        let started = clock.now
        #expect(await inbox.next(until: started + .milliseconds(50)) == nil)
        #expect(clock.now - started >= .milliseconds(50))
        // A deadline already past returns at once, and an element already queued wins over it.
        inbox.send(7)
        #expect(await inbox.next(until: started) == 7)
        #expect(await inbox.next(until: started) == nil)
    }

    /// One timer serves every wait: a wait ended early by an element leaves its ring behind, and that
    /// ring must not end a later wait with a later deadline; a later, earlier deadline still comes.
    @Test func aWaitEndedEarlyDoesNotCutTheNextWaitShort() async {
        let inbox = Inbox<Int>()
        let clock = ContinuousClock()
        let early = Task { await inbox.next(until: clock.now + .milliseconds(30)) }
        // Sent while the task waits (or before it does): the element ends it before its deadline.
        inbox.send(2)
        #expect(await early.value == 2)
        let started = clock.now
        #expect(await inbox.next(until: started + .milliseconds(300)) == nil)
        #expect(clock.now - started >= .milliseconds(300), "the earlier wait's ring ended this one")
        // A far deadline, then a near one: the near one is not held back by the far one.
        let far = Task { await inbox.next(until: clock.now + .seconds(3_600)) }
        inbox.send(3)
        #expect(await far.value == 3)
        let near = clock.now
        #expect(await inbox.next(until: near + .milliseconds(50)) == nil)
        #expect(clock.now - near < .seconds(60))
    }

    @Test func cancellingTheWaitDoesNotEndTheInbox() async {
        let inbox = Inbox<Int>()
        let waiter = Task { await inbox.next() }
        waiter.cancel()
        #expect(await waiter.value == nil)
        #expect(inbox.send(1))
        #expect(await inbox.next() == 1)
    }

    @Test func closingHandsBackWhatWasQueuedAndRefusesMore() async {
        let inbox = Inbox<Int>()
        inbox.send(1)
        inbox.send(2)
        #expect(await inbox.next() == 1)
        #expect(inbox.close() == [2])
        #expect(!inbox.send(3))
        #expect(await inbox.next() == nil)
    }
}

/// The scheduler's deadlines, driven with made-up instants (its clock is whatever the caller says).
@Suite struct FetchSchedulerTests {
    let zero = ContinuousClock.now

    func at(_ seconds: Int) -> ContinuousClock.Instant { zero + .seconds(seconds) }

    @Test func aWaitingDelayedFetchCoversAnotherOfItsTrigger() {
        var scheduler = FetchScheduler()
        // A reconnect, then another before the first one's fetch: one fetch, at the first deadline
        // (it comes after the second reconnect too).
        scheduler.scheduleIfUnset(.delayed(.pushReconnect), at: at(20))
        scheduler.scheduleIfUnset(.delayed(.pushReconnect), at: at(3))
        scheduler.scheduleIfUnset(.delayed(.push), at: at(9))
        scheduler.scheduleIfUnset(.delayed(.realtime(attempt: 1)), at: at(4))
        scheduler.scheduleIfUnset(.delayed(.realtime(attempt: 2)), at: at(5))
        let due = scheduler.takeDue(now: at(30))
        #expect(due.count == 4, "\(due)")
        if case .delayed(.pushReconnect) = due.last {} else { Issue.record("the first deadline kept: \(due)") }
        // Once it has fired, the next reconnect schedules a fetch again.
        scheduler.scheduleIfUnset(.delayed(.pushReconnect), at: at(40))
        #expect(scheduler.earliest == at(40))
    }

    @Test func aJobReplacesOneOfItsKindAndDelayedFetchesOneOfTheirTrigger() {
        var scheduler = FetchScheduler()
        scheduler.schedule(.timer, at: at(60))
        scheduler.schedule(.timer, at: at(30))
        scheduler.schedule(.delayed(.push), at: at(2))
        scheduler.schedule(.delayed(.pushReconnect), at: at(1))
        scheduler.schedule(.systemChange([.network]), at: at(5))
        scheduler.schedule(.systemChange([.clock]), at: at(6))
        #expect(scheduler.earliest == at(1))
        #expect(scheduler.takeDue(now: at(0)).isEmpty)
        let due = scheduler.takeDue(now: at(10))
        #expect(due.count == 3, "two delayed fetches and one system change: \(due)")
        if case .delayed(.pushReconnect) = due[0] {} else { Issue.record("earliest first: \(due)") }
        if case .systemChange([.network, .clock]) = due[2] {
        } else {
            Issue.record("one debounced job, at the later deadline, for both changes: \(due)")
        }
        #expect(scheduler.earliest == at(30), "the timer set last")
        #expect(scheduler.takeDue(now: at(30)).count == 1)
        #expect(scheduler.earliest == nil)
    }

    @Test func theStoreRetryKeepsItsFirstDeadline() {
        var scheduler = FetchScheduler()
        scheduler.scheduleIfUnset(.storeRetry, at: at(5))
        scheduler.scheduleIfUnset(.storeRetry, at: at(9))
        #expect(scheduler.earliest == at(5))
        scheduler.cancel(.storeRetry)
        #expect(!scheduler.isScheduled(.storeRetry))
    }

    @Test func aRoundTakesEveryWaitingRequest() {
        var scheduler = FetchScheduler()
        scheduler.request(.push)
        scheduler.request(.manual(force: true, ignoreThrottle: false))
        #expect(scheduler.takePending().map(\.trigger) == [.push, .manual(force: true, ignoreThrottle: false)])
        #expect(scheduler.pending.isEmpty)
    }

    @Test func theRoundTellsTheSourceAReloadFirstThenTheLatestRealtimeAttempt() {
        #expect(
            FetchTrigger.representative(of: [.push, .realtime(attempt: 1), .realtime(attempt: 3)])
                == .realtime(attempt: 3))
        #expect(
            FetchTrigger.representative(of: [.realtime(attempt: 2), .reload(newSource: false)])
                == .reload(newSource: false))
        #expect(FetchTrigger.representative(of: [.timer, .push]) == .timer)
        #expect(!FetchTrigger.reload(newSource: true).sendsETag)
        #expect(FetchTrigger.reload(newSource: true).ignoresThrottle)
        #expect(!FetchTrigger.reload(newSource: false).ignoresThrottle, "the same source's throttle holds")
    }
}
