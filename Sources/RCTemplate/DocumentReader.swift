import RCCore
import RCService
import Synchronization

/// Reads what the file and http sources deliver: a fetch response, or a template whose
/// server-template conditions are evaluated here with the device id and `[Signals]` as context.
/// Conditions this agent cannot evaluate are false, and each is reported once.
/// Package access: the parser fuzz targets read documents through it.
package final class DocumentReader: Sendable {
    private let context: EvaluationContext
    private let log: Logger
    /// The conditions already reported, so each is logged once however often it comes back; at most
    /// ``maximumRemembered`` of them (a server naming new ones in every document must not grow the
    /// daemon with every fetch: past the bound only the last document's are remembered).
    private let alreadyReported = Mutex<Set<ByteKey>>([])

    /// The most condition names remembered as reported.
    package static let maximumRemembered = 1_000

    /// How many condition names are remembered as reported.
    package var rememberedCount: Int { alreadyReported.withLock { $0.count } }

    /// Verifies signed documents (`TrustedKeys=`) before they are read; `nil`: plain JSON.
    private let opener: (any DocumentOpener)?

    package init(
        deviceId: String, signals: [(name: String, value: String)], log: Logger, opener: (any DocumentOpener)? = nil
    ) {
        context = EvaluationContext(deviceId: deviceId, signals: Dictionary(signals.map { ($0.name, $0.value) }) { $1 })
        self.log = log
        self.opener = opener
    }

    /// Identifies the evaluation context: sources add it to their ETags, so a change of `[Signals]`
    /// (or of the device id) makes the next fetch evaluate the document again.
    package var contextTag: String {
        let text =
            context.deviceId + "\n"
            + context.signals.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            .joined(separator: "\n")
        return FNV1a.tag(text.utf8) + (opener.map { "+" + $0.contextTag } ?? "")
    }

    /// Parses the document once; a template with `conditions` is then evaluated for this device.
    /// With an opener, the document is the one inside the envelope, and is accepted once read.
    /// `bytes` are released once parsed when the caller passed its only reference (`consume`).
    package func read(_ bytes: consuming [UInt8], name: String) throws(DocumentError) -> RemoteDocument {
        guard let opener else { return try read(plain: consume bytes, name: name) }
        let opened = try opener.open(bytes, name: name)
        let document = try read(opened.document, name: name)
        try opened.accept()
        return document
    }

    private func read(plain bytes: consuming [UInt8], name: String) throws(DocumentError) -> RemoteDocument {
        let shape = try DocumentShape(bytes: copy bytes, document: name)
        _ = consume bytes  // the document's bytes go before its values are copied out of the shape
        return try read(shape, name: name)
    }

    private func read(_ json: JSONValue, name: String) throws(DocumentError) -> RemoteDocument {
        try read(DocumentShape(json), name: name)
    }

    private func read(_ shape: DocumentShape, name: String) throws(DocumentError) -> RemoteDocument {
        // A template with conditions is evaluated, which checks everything the plain reader would
        // (each parameter, its default and its key and value, the version) and more: it is not read
        // twice (the second walk was 2% of a 3,000-parameter fetch's CPU, BENCHMARKS.md).
        guard shape.parameters != nil && shape["conditions"] != nil else {
            return try RemoteDocument.read(shape, name: name)
        }
        let evaluation = try TemplateEvaluator.evaluate(shape, name: name, context: context)
        let fresh = alreadyReported.withLock { reported in
            let new = evaluation.unsupportedConditions.filter { !reported.contains(ByteKey($0)) }
            if reported.count + new.count > Self.maximumRemembered {
                reported = Set(evaluation.unsupportedConditions.prefix(Self.maximumRemembered).map { ByteKey($0) })
            } else {
                reported.formUnion(new.map { ByteKey($0) })
            }
            return new
        }
        if !fresh.isEmpty {
            log.warning(
                "\(name): cannot evaluate condition(s) \(fresh.joined(separator: ", ")) on the device; they count as false"
            )
        }
        return .update(values: evaluation.values, templateVersion: evaluation.templateVersion)
    }
}
