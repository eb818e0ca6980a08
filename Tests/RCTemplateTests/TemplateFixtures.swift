import RCCore
import RCTemplate

/// Builds template documents around single conditions, so every test goes through the public
/// entry point (JSON bytes in, resolved values out).
enum TemplateFixtures {
    static let documentName = "template.json"

    static func evaluate(_ text: String, deviceId: String = "device-1", signals: [String: String] = [:])
        throws(DocumentError) -> TemplateEvaluation
    {
        try TemplateEvaluator.evaluate(
            Array(text.utf8), name: documentName, context: EvaluationContext(deviceId: deviceId, signals: signals))
    }

    /// A template with one condition `c` (its JSON given) and one parameter `p` that is "yes" under
    /// `c` and "no" otherwise.
    static func template(condition: String) -> String {
        """
        {
          "conditions": [{"name": "c", "condition": \(condition)}],
          "parameters": {"p": {"defaultValue": {"value": "no"}, "conditionalValues": {"c": {"value": "yes"}}}}
        }
        """
    }

    /// Whether the condition JSON holds for the device.
    static func holds(_ condition: String, deviceId: String = "device-1", signals: [String: String] = [:])
        throws(DocumentError) -> Bool
    {
        let values = try evaluate(template(condition: condition), deviceId: deviceId, signals: signals).values
        return values["p"] == "yes"
    }

    static func json(_ text: String) -> String { JSONValue.string(text).compactText }

    static func customSignal(_ op: String, key: String = "k", targets: [String]) -> String {
        let list = JSONValue.array(targets.map(JSONValue.string)).compactText
        return """
            {"customSignal": {"customSignalOperator": \(json(op)), "customSignalKey": \(json(key)), \
            "targetCustomSignalValues": \(list)}}
            """
    }

    /// Whether `op` holds for the signal `k` = `actual` (absent when `nil`) against `targets`.
    static func signal(_ op: String, _ actual: String?, _ targets: [String]) throws(DocumentError) -> Bool {
        try holds(customSignal(op, targets: targets), signals: actual.map { ["k": $0] } ?? [:])
    }
}
