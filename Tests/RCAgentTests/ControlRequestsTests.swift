import RCCore
import Testing

@testable import RCAgent
@testable import RCStore

/// What an error while handling a request tells the client: the code says what failed.
@Suite struct ControlRequestsTests {
    @Test func aStoreFailureIsAStorageErrorNotInternal() {
        let full = SQLiteError(code: 13, message: "database or disk is full", sql: "INSERT INTO events")
        #expect(ControlRequests.refusal(for: full).code == .storage)
        #expect(ControlRequests.refusal(for: StoreError.sqlite(full)).code == .storage)
        #expect(ControlRequests.refusal(for: full).message.contains("database or disk is full"))
        struct Unexpected: Error {}
        #expect(ControlRequests.refusal(for: Unexpected()).code == .internalError)
    }

    @Test func aFetchCancelledByShutdownSaysSo() {
        #expect(FetchOutcome.cancelled.reply == .failure(ControlError(.shuttingDown, "the daemon is shutting down")))
        #expect(FetchOutcome.noChange.reply == .success(.noChange))
    }
}
