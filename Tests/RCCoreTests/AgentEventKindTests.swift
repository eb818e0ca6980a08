import RCCore
import Testing

/// The event kinds' spellings are the wire's and the database's: a rename would break `watch`
/// clients, hooks that switch on `RCAGENT_EVENT` and the logs of earlier versions.
@Suite struct AgentEventKindTests {
    @Test func theSpellingsStayAsTheyWere() {
        #expect(
            AgentEventKind.allCases.map(\.rawValue) == [
                "fetched", "fetch-failed", "activated", "stale-set", "stale-cleared", "activity-started",
                "activity-updated", "activity-ended", "activity-removed", "clock-stepped-back", "database-recovered",
                "activation-deferred", "rolled-back",
            ])
    }

    @Test func theHooksHearActivationsTheStaleFlagAndActivities() {
        #expect(
            AgentEventKind.allCases.filter(\.reachesHooks) == [
                .activated, .staleSet, .staleCleared, .activityStarted, .activityUpdated, .activityEnded,
                .activityRemoved, .activationDeferred, .rolledBack,
            ])
        #expect(AgentEventKind.allCases.filter(\.isActivity).allSatisfy { $0.rawValue.hasPrefix("activity-") })
        #expect(AgentEventKind.allCases.filter(\.isActivity).count == 4)
    }

    @Test func aKindOfAnotherVersionIsNoKindOfThisOne() {
        #expect(AgentEventKind(rawValue: "note") == nil)
        #expect(AgentEventKind(rawValue: "Activated") == nil)
    }
}
