import RCCore
import Testing

/// `Jitter`: the random spreads stay within their bounds.
@Suite struct JitterTests {
    @Test func upToStaysWithinZeroAndTheLimit() {
        for _ in 0..<1_000 {
            let wait = Jitter.upTo(.seconds(3))
            #expect(wait >= .zero && wait <= .seconds(3))
        }
        #expect(Jitter.upTo(.zero) == .zero)
        #expect(Jitter.upTo(.seconds(-1)) == .zero)
    }

    @Test func halfAroundScalesByHalfToOneAndAHalf() {
        #expect(Jitter.halfAround(.seconds(10), random: 0) == .seconds(5))
        #expect(Jitter.halfAround(.seconds(10), random: 0.5) == .seconds(10))
        #expect(Jitter.halfAround(.seconds(10), random: 0.999) == .milliseconds(14_990))
    }
}
