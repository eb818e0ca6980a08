import Glibc
import RCCore
import RCMQTT
import TestSupport
import Testing

/// ``BrokerRotation``: a failed connect or a lost connection moves to the next broker at once;
/// the backoff comes only after a full round, doubling per failed round up to a minute.
@Suite struct BrokerRotationTests {
    @Test func oneBrokerBacksOffAfterEachFailure() {
        var rotation = BrokerRotation(count: 1)
        #expect(rotation.failed() == .seconds(1))
        #expect(rotation.failed() == .seconds(2))
        #expect(rotation.failed() == .seconds(4))
        #expect(rotation.index == 0)
        // Connected, then lost: the next attempt waits the first step again.
        rotation.connected()
        #expect(rotation.failed() == .seconds(1))
    }

    @Test func aListIsTriedInTurnAndWaitsOnlyAfterAFullRound() {
        var rotation = BrokerRotation(count: 3)
        #expect(rotation.index == 0)
        #expect(rotation.failed() == .zero)
        #expect(rotation.index == 1)
        #expect(rotation.failed() == .zero)
        #expect(rotation.index == 2)
        #expect(rotation.failed() == .seconds(1))
        #expect(rotation.index == 0)
        #expect(rotation.failed() == .zero)
        #expect(rotation.failed() == .zero)
        #expect(rotation.failed() == .seconds(2))
    }

    @Test func aLostConnectionMovesToTheNextBrokerAtOnce() {
        var rotation = BrokerRotation(count: 3)
        _ = rotation.failed()  // broker 0 down
        rotation.connected()  // on broker 1
        #expect(rotation.index == 1)
        // Broker 1 lost: 2 at once, then 0 at once, and only then a wait.
        #expect(rotation.failed() == .zero)
        #expect(rotation.index == 2)
        #expect(rotation.failed() == .zero)
        #expect(rotation.index == 0)
        #expect(rotation.failed() == .seconds(1))
        #expect(rotation.index == 1)
    }

    @Test func theBackoffStopsAtAMinute() {
        var rotation = BrokerRotation(count: 2)
        var waits: [Duration] = []
        for _ in 0..<40 { waits.append(rotation.failed()) }
        #expect(waits.max() == .seconds(60))
        #expect(waits.filter { $0 != .zero }.count == 20)
    }
}

/// ``BrokerRotation`` with another step: the session's tests run it in milliseconds.
@Suite struct BrokerRotationStepTests {
    @Test func theStepIsConfigurable() {
        var rotation = BrokerRotation(count: 1, base: .milliseconds(2), cap: .milliseconds(5))
        #expect(rotation.failed() == .milliseconds(2))
        #expect(rotation.failed() == .milliseconds(4))
        #expect(rotation.failed() == .milliseconds(5))
    }
}

/// ``MQTTBackoff``: ±50% around the step, never more, never less, and nothing around zero.
@Suite struct MQTTBackoffTests {
    @Test func theJitterStaysWithinHalfTheStep() {
        #expect(MQTTBackoff.jittered(.seconds(2), factor: 0.5) == .seconds(1))
        #expect(MQTTBackoff.jittered(.seconds(2), factor: 1.5) == .seconds(3))
        #expect(MQTTBackoff.jittered(.seconds(2), factor: 9) == .seconds(3))
        #expect(MQTTBackoff.jittered(.seconds(2), factor: 0) == .seconds(1))
        for _ in 0..<100 {
            let wait = MQTTBackoff.jittered(.seconds(10))
            #expect(wait >= .seconds(5) && wait <= .seconds(15))
        }
    }

    @Test func noWaitStaysNoWait() {
        #expect(MQTTBackoff.jittered(.zero) == .zero)
    }
}

/// ``ProtocolFallback``: MQTT 5 first, 3.1.1 for good with a broker that refused the version, per
/// broker of the list.
@Suite struct ProtocolFallbackTests {
    @Test func everyBrokerIsTriedInMQTT5First() {
        let fallback = ProtocolFallback()
        #expect(fallback.version(for: 0) == .v5)
        #expect(fallback.version(for: 7) == .v5)
    }

    @Test func aVersionRefusalFallsBackAtOnceAndIsRemembered() {
        var fallback = ProtocolFallback()
        let answer1 = fallback.refusedVersion(of: 1)
        #expect(answer1)
        #expect(fallback.version(for: 1) == .v311)
        #expect(fallback.version(for: 1) == .v311)
    }

    @Test func aRefusalIn311IsAPlainRefusal() {
        var fallback = ProtocolFallback()
        _ = fallback.refusedVersion(of: 0)
        let answer2 = fallback.refusedVersion(of: 0)
        #expect(!answer2)
        #expect(fallback.version(for: 0) == .v311)
    }

    @Test func theOtherBrokersKeepMQTT5() {
        var fallback = ProtocolFallback()
        _ = fallback.refusedVersion(of: 0)
        #expect(fallback.version(for: 1) == .v5)
        #expect(fallback.legacyBrokers == [0])
    }
}

/// ``SubscriptionRetry``: a refused subscription is asked for again, 1 s doubling to 5 min, per
/// topic; logged the first time and every tenth; a grant or a new connection starts over.
@Suite struct SubscriptionRetryTests {
    @Test func refusalsBackOffPerTopic() {
        var retry = SubscriptionRetry()
        let answer3 = retry.answered("a", refused: true)
        #expect(answer3 == .refused(refusals: 1, step: .seconds(1), log: true))
        let answer4 = retry.answered("a", refused: true)
        #expect(answer4 == .refused(refusals: 2, step: .seconds(2), log: false))
        // Another topic counts on its own.
        let answer5 = retry.answered("b", refused: true)
        #expect(answer5 == .refused(refusals: 1, step: .seconds(1), log: true))
        let answer6 = retry.answered("a", refused: true)
        #expect(answer6 == .refused(refusals: 3, step: .seconds(4), log: false))
    }

    @Test func theWaitStopsAtFiveMinutesAndEveryTenthIsLogged() {
        var retry = SubscriptionRetry()
        var outcomes: [SubscriptionRetry.Outcome] = []
        for _ in 0..<20 { outcomes.append(retry.answered("a", refused: true)) }
        #expect(outcomes.last == .refused(refusals: 20, step: .seconds(300), log: true))
        let logged = outcomes.filter { if case .refused(_, _, true) = $0 { true } else { false } }
        #expect(logged.count == 3)  // the 1st, 10th and 20th
    }

    @Test func aGrantSaysHowManyRefusalsCameBeforeAndStartsOver() {
        var retry = SubscriptionRetry()
        let answer7 = retry.answered("a", refused: false)
        #expect(answer7 == .granted(afterRefusals: 0))
        _ = retry.answered("a", refused: true)
        _ = retry.answered("a", refused: true)
        let answer8 = retry.answered("a", refused: false)
        #expect(answer8 == .granted(afterRefusals: 2))
        let answer9 = retry.answered("a", refused: true)
        #expect(answer9 == .refused(refusals: 1, step: .seconds(1), log: true))
    }

    @Test func aNewConnectionStartsOver() {
        var retry = SubscriptionRetry()
        _ = retry.answered("a", refused: true)
        retry.reset()
        let answer10 = retry.answered("a", refused: true)
        #expect(answer10 == .refused(refusals: 1, step: .seconds(1), log: true))
    }
}

/// ``MQTTPassword``: one strict reading of a password file for the daemon and rcadmin.
@Suite struct MQTTPasswordTests {
    @Test func theTextIsTrimmed() throws {
        try TemporaryDirectory.with { dir in
            let path = try dir.write("pw", "  s3cret \n")
            #expect(try MQTTPassword.read(fromFile: path) == "s3cret")
        }
    }

    @Test func aMissingFileIsAnErrorNamingIt() throws {
        try TemporaryDirectory.with { dir in
            let path = dir.file("none")
            #expect { _ = try MQTTPassword.read(fromFile: path) } throws: {
                "\($0)".contains(path) && "\($0)".contains("no such file")
            }
        }
    }

    @Test func aFileOver64KiBIsRefused() throws {
        try TemporaryDirectory.with { dir in
            let path = try dir.write("big", String(repeating: "a", count: MQTTPassword.limit + 1))
            #expect { _ = try MQTTPassword.read(fromFile: path) } throws: {
                "\($0)".contains("larger than 65536 bytes")
            }
        }
    }

    @Test func aFIFOIsRefusedWithoutBlocking() throws {
        try TemporaryDirectory.with { dir in
            let path = dir.file("fifo")
            #expect(mkfifo(path, 0o600) == 0)
            #expect { _ = try MQTTPassword.read(fromFile: path) } throws: { "\($0)".contains("FIFO") }
        }
    }
}

/// ``MQTTCredentials``: the one way a login reaches the client's options, for the daemon and rcadmin.
@Suite struct MQTTCredentialsTests {
    @Test func theLoginAndTLSFilesReachTheOptionsWithThePasswordRead() throws {
        try TemporaryDirectory.with { dir in
            let file = try dir.write("pw", "secret\n")
            var options = MQTTClient.Options()
            try MQTTCredentials(
                username: "u", passwordFile: file, caFile: "/ca", certificateFile: "/c", keyFile: "/k"
            ).apply(to: &options, tls: true)
            #expect(options.username == "u" && options.password == "secret" && options.tls)
            #expect(options.caFile == "/ca" && options.certificateFile == "/c" && options.keyFile == "/k")
        }
    }

    @Test func aPasswordFileWithoutAUserIsNotRead() throws {
        var options = MQTTClient.Options()
        try MQTTCredentials(passwordFile: "/nonexistent/pw").apply(to: &options, tls: false)
        #expect(options.username == nil && options.password == nil)
    }

    @Test func anUnreadablePasswordFileIsASetupErrorSayingWhy() {
        var options = MQTTClient.Options()
        #expect {
            try MQTTCredentials(username: "u", passwordFile: "/nonexistent/pw").apply(to: &options, tls: false)
        } throws: { ($0 as? MQTTError)?.kind == .setup && "\($0)".contains("/nonexistent/pw") }
    }

    @Test func aClientCertificateNeedsTLS() {
        var options = MQTTClient.Options()
        #expect {
            try MQTTCredentials(certificateFile: "/c", keyFile: "/k").apply(to: &options, tls: false)
        } throws: { "\($0)" == MQTTCredentials.certificateNeedsTLS }
    }
}
