import RCCore
import Testing

@testable import RCAgent

/// Activations and rollbacks waiting for slow hooks keep their order: the hooks end on the values
/// that are active.
@Suite struct HookEventOrderTests {
    func event(_ kind: AgentEventKind, _ version: String, _ url: (old: String, new: String)) -> HookEvent {
        var event = HookEvent(kind: kind, templateVersion: version)
        event.changes[ByteKey("url")] = HookEvent.Change(old: url.old, new: url.new, source: .remote)
        return event
    }

    @Test func anActivationAfterARollbackDoesNotFoldIntoTheOneBeforeIt() {
        var pending: [HookEvent] = []
        HookEvent.queue(event(.activated, "2", ("a", "b")), into: &pending)
        HookEvent.queue(event(.rolledBack, "1", ("b", "a")), into: &pending)
        HookEvent.queue(event(.activated, "3", ("a", "c")), into: &pending)
        #expect(pending.map(\.kind) == [.activated, .rolledBack, .activated])
        #expect(pending.last?.changes[ByteKey("url")]?.new == "c")
        // Two activations in a row still fold into one, as before.
        HookEvent.queue(event(.activated, "4", ("c", "d")), into: &pending)
        #expect(pending.map(\.templateVersion) == ["2", "1", "4"])
        #expect(pending.last?.changes[ByteKey("url")]?.old == "a")
        #expect(pending.last?.changes[ByteKey("url")]?.new == "d")
    }
}
