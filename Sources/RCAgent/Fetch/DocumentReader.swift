import RCCore
import RCTemplate

/// Reads what the file and http sources deliver (SPEC §3): a fetch response, or a template whose
/// server-template conditions are evaluated here with the device id and `[Signals]` as context.
/// Conditions this agent cannot evaluate are false, and each is reported once.
/// Package access: the parser fuzz targets read documents through it.
package final class DocumentReader: Sendable {
    private let context: EvaluationContext
    private let log: Logger
    private let reported = NSLockLite()
    nonisolated(unsafe) private var alreadyReported: Set<String> = []

    package init(deviceId: String, signals: [(name: String, value: String)], log: Logger) {
        context = EvaluationContext(deviceId: deviceId, signals: Dictionary(signals.map { ($0.name, $0.value) }) { $1 })
        self.log = log
    }

    /// Identifies the evaluation context: sources add it to their ETags, so a change of `[Signals]`
    /// (or of the device id) makes the next fetch evaluate the document again.
    var contextTag: String {
        let text =
            context.deviceId + "\n"
            + context.signals.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            .joined(separator: "\n")
        return FileSource.etag(of: Array(text.utf8))
    }

    package func read(_ bytes: [UInt8], name: String) throws(DocumentError) -> RemoteDocument {
        // Only a document that mentions conditions may need the evaluator; the rest take the fast path.
        guard Self.mentionsConditions(bytes) else { return try RemoteDocument.parse(bytes, name: name) }
        let shape = try RemoteDocument.parse(bytes, name: name)
        guard case .update = shape, (try? JSONValue.parse(bytes))?["parameters"] != nil else { return shape }
        let evaluation = try TemplateEvaluator.evaluate(bytes, name: name, context: context)
        let fresh = reported.withLock {
            let new = evaluation.unsupportedConditions.filter { !alreadyReported.contains($0) }
            alreadyReported.formUnion(new)
            return new
        }
        if !fresh.isEmpty {
            log.warning(
                "\(name): cannot evaluate condition(s) \(fresh.joined(separator: ", ")) on the device; they count as false"
            )
        }
        return .update(values: evaluation.values, templateVersion: evaluation.templateVersion)
    }

    /// Whether the document may have a `conditions` member: the name written out, or any `\u` escape,
    /// which could spell it (`"condition\u0073"`) and must not make the agent skip the conditions.
    private static func mentionsConditions(_ bytes: [UInt8]) -> Bool {
        contains(bytes, Array("\"conditions\"".utf8)) || contains(bytes, Array("\\u".utf8))
    }

    private static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard haystack.count >= needle.count, let first = needle.first else { return false }
        var index = 0
        let last = haystack.count - needle.count
        while index <= last {
            if haystack[index] == first && haystack[index..<(index + needle.count)].elementsEqual(needle) {
                return true
            }
            index += 1
        }
        return false
    }
}
