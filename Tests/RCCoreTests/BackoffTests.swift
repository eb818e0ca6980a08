import RCCore
import Testing

@Suite struct BackoffTests {
    @Test func doublesFromTheBaseUpToTheCap() {
        let steps = (0...12).map { Backoff.step(failures: $0, base: .seconds(1), cap: .seconds(300)) }
        #expect(steps == [1, 1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300].map { Duration.seconds($0) })
        #expect(Backoff.step(failures: Int.max, base: .milliseconds(500), cap: .seconds(60)) == .seconds(60))
    }
}
