import RCCore
import TestSupport
import Testing

@testable import RCStore

/// The deferred activation's record: kept beside the pending snapshot, announced once with its
/// event, copied to the reader file (status reads it with the daemon down), and forgotten.
@Suite struct DeferredActivationStoreTests {
    private let t0 = Timestamp(milliseconds: 1_764_676_800_000)

    @Test func theRecordIsKeptAnnouncedCopiedToReadersAndForgotten() throws {
        try TemporaryDirectory.with { dir throws in try check(dir) }
    }

    private func check(_ dir: TemporaryDirectory) throws {
        let store = try StateStore.openForWriting(path: dir.file("state.db"))
        #expect(try store.deferredActivation() == nil)
        let waiting = DeferredActivation(templateVersion: "8", since: t0, until: t0 + .seconds(3_600), why: .window)
        try store.setDeferredActivation(waiting, announce: true, at: t0)
        #expect(try store.deferredActivation() == waiting)
        let events = store.takeCommittedEvents()
        #expect(events.map { $0.kind } == ["activation-deferred"])
        #expect(events.first?.detail == waiting.json)

        // A new end of the same wait is kept without a second event.
        let later = DeferredActivation(templateVersion: "8", since: t0, until: nil, why: .hold)
        try store.setDeferredActivation(later, announce: false, at: t0 + .seconds(1))
        #expect(store.takeCommittedEvents().isEmpty)

        let reader = dir.file("reader.db")
        try store.writeReaderFile(to: reader)
        #expect(try StateStore.openReaderFile(path: reader)?.deferredActivation() == later)

        try store.setDeferredActivation(nil, announce: false, at: t0 + .seconds(2))
        #expect(try store.deferredActivation() == nil)
        try store.writeReaderFile(to: reader)
        let cleared: DeferredActivation?? = try StateStore.openReaderFile(path: reader)?.deferredActivation()
        #expect(cleared == .some(nil))
    }

    @Test func aRecordAnotherVersionWroteIsNone() {
        #expect(DeferredActivation(json: .object([("templateVersion", .string("8"))])) == nil)
        #expect(
            DeferredActivation(
                json: .object([
                    ("templateVersion", .string("8")), ("since", .string("2026-12-02T12:00:00Z")),
                    ("until", .string("soon")), ("why", .string("window")),
                ])) == nil)
        #expect(
            DeferredActivation(
                json: .object([
                    ("templateVersion", .string("8")), ("since", .string("2026-12-02T12:00:00Z")),
                    ("until", .null), ("why", .string("weather")),
                ])) == nil)
    }
}
