import Foundation
import TestSupport
import Testing

/// `rcadmin notify-stale --activate-now`: the kill-switch ping carries `"activate": "now"` in its
/// data, over FCM (the fake FCM server's log) and over MQTT (a real mosquitto and subscriber).
@Suite struct NotifyStaleActivateNowTests {
    typealias Fixture = AdminTests.Fixture

    @Test func thePingCarriesActivateNowOverFCMAndMQTT() throws {
        let fixture = try Fixture()
        let broker = try MosquittoBroker(in: fixture.sandbox)
        let subscriber = try RelayTests.Subscriber(broker, in: fixture.sandbox, topic: "PUSH_RC")
        let sent = try fixture.rcadmin([
            "notify-stale", "--fcm", "--mqtt", "mqtt://127.0.0.1:\(broker.port)", "--template-version", "8",
            "--activate-now",
        ])
        #expect(sent.status == 0, "\(sent.stderr)")
        let data = #"{"CONFIG_STATE":"STALE","templateVersion":"8","activate":"now"}"#
        #expect(sent.stdout.contains("sent \(data) to FCM topic PUSH_RC as projects/"), "\(sent.stdout)")
        #expect(sent.stdout.contains(#"published {"data":\#(data)} to PUSH_RC"#), "\(sent.stdout)")
        let message = try #require(fixture.server.fcmMessages.last?["message"] as? [String: Any])
        #expect(
            message["data"] as? [String: String] == [
                "CONFIG_STATE": "STALE", "templateVersion": "8", "activate": "now",
            ])
        #expect(eventually { subscriber.pings == [#"{"data":\#(data)}"#] }, "\(subscriber.pings)")

        // Without the flag the ping is the plain one: nothing activates outside a window by accident.
        let plain = try fixture.rcadmin(["notify-stale", "--mqtt", "mqtt://127.0.0.1:\(broker.port)"])
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(
            eventually { subscriber.pings.last == #"{"data":{"CONFIG_STATE":"STALE"}}"# }, "\(subscriber.pings)")
    }
}
