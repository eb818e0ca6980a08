import Glibc
import RCCore

/// `rcadmin`: the operator/CI tool. This build has `notify-stale --mqtt`; templates, tokens, FCM
/// and live activities come with the rcadmin issue.
public enum AdminTool {
    static let usage = """
        Usage: rcadmin notify-stale --mqtt URL [--topic PUSH_RC] [--device ID] [--template-version N]
                                    [--ca-file FILE] [--username U --password-file FILE]

        Publishes the stale ping {"data":{"CONFIG_STATE":"STALE"[,"templateVersion":"N"]}} at QoS 1 to the
        topic (or TOPIC/ID with --device), the MQTT counterpart of the FCM PUSH_RC topic message.

        Exit codes: 0 published (the broker acknowledged it), 1 failure, 64 usage error.

        """

    public static func main(arguments: [String]) -> Int32 {
        guard let command = arguments.first else { return usageError("no command given") }
        switch command {
        case "--help", "-h", "help":
            print(usage, terminator: "")
            return 0
        case "--version":
            print("rcadmin \(BuildInfo.version)")
            return 0
        case "notify-stale":
            return notifyStale(Array(arguments.dropFirst()))
        case "relay":
            return relay(Array(arguments.dropFirst()), environment: Environment.current())
        default:
            return usageError("unknown command '\(command)'")
        }
    }

    static func notifyStale(_ arguments: [String]) -> Int32 {
        var options: [String: String] = [:]
        let known = ["mqtt", "topic", "device", "template-version", "ca-file", "username", "password-file"]
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--help" {
                print(usage, terminator: "")
                return 0
            }
            guard argument.hasPrefix("--"), known.contains(String(argument.dropFirst(2))) else {
                return usageError("unknown option '\(argument)'")
            }
            guard index + 1 < arguments.count else { return usageError("option '\(argument)' needs a value") }
            options[String(argument.dropFirst(2))] = arguments[index + 1]
            index += 2
        }
        guard let url = options["mqtt"] else {
            return usageError("notify-stale needs --mqtt URL (the FCM topic half comes with a later release)")
        }
        let version = options["template-version"]
        if let version, version.isEmpty || !version.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) {
            return usageError("--template-version must be a decimal number, got '\(version)'")
        }
        let topic = (options["topic"] ?? "PUSH_RC") + (options["device"].map { "/" + $0 } ?? "")
        let payload = StalePing.mqttPayload(templateVersion: version)
        var password: String?
        if let file = options["password-file"] {
            guard let bytes = try? FileBytes.read(file) else { return failure("cannot read \(file)") }
            password = String(String(decoding: bytes, as: UTF8.self).trimmingSpaces())
        }
        do {
            try MQTTPublisher.publish(
                url: url, topic: topic, payload: payload, caFile: options["ca-file"], username: options["username"],
                password: password)
        } catch {
            return failure("cannot publish the stale ping: \(error)")
        }
        print("published \(payload) to \(topic)")
        return 0
    }

    static func usageError(_ message: String) -> Int32 {
        writeError("Error: \(message)\n\(usage)")
        return 64
    }

    static func failure(_ message: String) -> Int32 {
        writeError("Error: \(message)\n")
        return 1
    }

    private static func writeError(_ text: String) {
        var text = text
        text.withUTF8 { buffer in _ = write(2, buffer.baseAddress, buffer.count) }
    }
}
