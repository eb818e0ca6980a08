internal import CMosquitto
import Glibc
import RCCore

/// Publishes one message at QoS 1 and returns once the broker acknowledged it (PUBACK).
enum MQTTPublisher {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func publish(
        url: String, topic: String, payload: String, caFile: String?, username: String?, password: String?,
        timeout: Duration = .seconds(30)
    ) throws(Failure) {
        guard let (tls, host, port) = MQTTAddress.parse(url) else {
            throw Failure(description: "not an mqtt:// or mqtts:// URL: \(url)")
        }
        mosquitto_lib_init()
        guard let handle = mosquitto_new(nil, true, nil) else {
            throw Failure(description: "cannot create an MQTT client")
        }
        defer { mosquitto_destroy(handle) }
        if let username { mosquitto_username_pw_set(handle, username, password) }
        if tls {
            let rc = mosquitto_tls_set(handle, caFile, caFile == nil ? "/etc/ssl/certs" : nil, nil, nil, nil)
            guard rc == MOSQ_ERR_SUCCESS.rawValue else {
                throw Failure(description: "TLS: \(String(cString: mosquitto_strerror(rc)))")
            }
        }
        // The publish callback ends the loop once the broker acknowledged the message.
        mosquitto_publish_callback_set(handle) { mosq, _, _ in mosquitto_disconnect(mosq) }
        var rc = mosquitto_connect(handle, host, port, 30)
        guard rc == MOSQ_ERR_SUCCESS.rawValue else {
            throw Failure(description: "cannot connect to \(host):\(port): \(String(cString: mosquitto_strerror(rc)))")
        }
        let bytes = Array(payload.utf8)
        rc = bytes.withUnsafeBytes { mosquitto_publish(handle, nil, topic, Int32($0.count), $0.baseAddress, 1, false) }
        guard rc == MOSQ_ERR_SUCCESS.rawValue else {
            throw Failure(description: "cannot publish to \(topic): \(String(cString: mosquitto_strerror(rc)))")
        }
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            rc = mosquitto_loop(handle, 200, 1)
            if rc == MOSQ_ERR_NO_CONN.rawValue { return }  // disconnected by the publish callback: acknowledged
            guard rc == MOSQ_ERR_SUCCESS.rawValue else {
                throw Failure(
                    description: "connection to \(host):\(port) failed: \(String(cString: mosquitto_strerror(rc)))")
            }
        }
        throw Failure(description: "the broker did not acknowledge the message within \(DurationText.format(timeout))")
    }
}
