import RCCore
import RCService
import RCTemplate

/// Templates with conditions, evaluated on the device.
enum TemplateTargets {
    static let all = [template, documentReader]

    /// The device the templates are evaluated for: a fixed id, and signals every operator kind can use.
    static let context = EvaluationContext(
        deviceId: "fuzz-device-0001",
        signals: ["store": "berlin-12", "app_version": "1.2.3", "screens": "4", "channel": "beta "])

    /// `TemplateEvaluator.evaluate` on a server template.
    static let template = FuzzTarget(
        "template", checkTemplate,
        """
        server template: errors name the document; evaluation is deterministic; values are parameters; \
        unsupported conditions are listed in byte order and once; without conditions it reads as RemoteDocument
        """)

    private static func checkTemplate(_ check: Checker, _ bytes: [UInt8]) throws(PropertyViolation) -> FuzzOutcome {
        let name = "template.json"
        guard
            let evaluation = try check.parsed(
                name, { try TemplateEvaluator.evaluate(bytes, name: $0, context: context) })
        else { return .rejected }
        try check.require(
            (try? TemplateEvaluator.evaluate(bytes, name: name, context: context)) == evaluation, "not deterministic")
        let json = try? JSONValue.parse(bytes)
        let parameters = Set(json?["parameters"]?.objectMembers?.map(\.key) ?? [])
        try check.require(evaluation.values.keys.allSatisfy(parameters.contains), "a value that is no parameter")
        // In the order of their bytes, as names are compared everywhere (`String`'s own order sorts
        // "a\u{301}" after "b": it compares normalized scalars).
        let unsupported = evaluation.unsupportedConditions.map { ByteKey($0) }
        try check.require(
            unsupported == Set(unsupported).sorted(), "unsupported conditions \(evaluation.unsupportedConditions)")
        if let version = evaluation.templateVersion {
            try check.require(
                !version.isEmpty && version.utf8.allSatisfy { $0 >= 48 && $0 <= 57 }, "template version \(version)")
        }
        let conditions = json?["conditions"]
        let hasConditions: Bool =
            switch conditions {
            case nil, .null?: false
            case let .array(items)?: !items.isEmpty
            default: true
            }
        if !hasConditions, let document = try? RemoteDocument.parse(bytes, name: name) {
            try check.require(
                document == .update(values: evaluation.values, templateVersion: evaluation.templateVersion),
                "without conditions, RemoteDocument reads \(document) but the evaluator \(evaluation)")
        }
        return .accepted
    }

    /// What the file and http sources (and tests) run a fetched document through.
    static let documentReader = FuzzTarget(
        "document-reader", checkDocumentReader,
        """
        fetched document through DocumentReader: errors name the source; it reads as RemoteDocument unless \
        the template has conditions, and then as TemplateEvaluator does
        """)

    private static func checkDocumentReader(_ check: Checker, _ bytes: [UInt8]) throws(PropertyViolation) -> FuzzOutcome
    {
        let name = "http://origin.test/remote.json"
        let reader = DocumentReader(
            deviceId: context.deviceId, signals: context.signals.sorted { $0.key < $1.key }.map { ($0.key, $0.value) },
            log: Logger { _ in })
        guard let document = try check.parsed(name, { try reader.read(bytes, name: $0) }) else { return .rejected }
        let plain = try? RemoteDocument.parse(bytes, name: name)
        try check.require(plain != nil, "DocumentReader accepted what RemoteDocument refuses")
        let isTemplate = (try? JSONValue.parse(bytes))?["parameters"] != nil
        if isTemplate, case .update = plain,
            let evaluation = try? TemplateEvaluator.evaluate(
                bytes, name: name, context: context)
        {
            try check.require(
                document == .update(values: evaluation.values, templateVersion: evaluation.templateVersion),
                "DocumentReader reads \(document), the evaluator \(evaluation)")
        } else {
            try check.require(document == plain, "DocumentReader reads \(document), RemoteDocument \(plain!)")
        }
        return .accepted
    }
}
