import RCCore
import RCService
import RCTemplate
import Synchronization
import Testing

@testable import RCAgent

/// What ``DocumentReader`` keeps between documents: the unsupported conditions it reported, so each
/// is logged once. A server that names new ones in every document used to grow that set, and the
/// daemon with it, by every fetch.
@Suite struct DocumentReaderMemoryTests {
    static func template(conditions names: [String]) -> [UInt8] {
        let conditions = names.map { #"{"name": "\#($0)", "expression": "app.version.>=(['2.0'])"}"# }
        return Array(
            #"{"conditions": [\#(conditions.joined(separator: ","))], "parameters": {"a": {"defaultValue": {"value": "x"}}}}"#
                .utf8)
    }

    @Test func rememberedConditionsStayBoundedAcrossDocuments() throws {
        let lines = Mutex<[String]>([])
        let reader = DocumentReader(
            deviceId: "device", signals: [], log: Logger { line in lines.withLock { $0.append(line) } })
        let perDocument = 300
        for round in 0..<10 {
            let names = (0..<perDocument).map { "c\(round)-\($0)" }
            _ = try reader.read(Self.template(conditions: names), name: "remote.json")
            #expect(reader.rememberedCount <= DocumentReader.maximumRemembered)
        }
        #expect(lines.withLock { $0.count } == 10, "each document's new names are reported, once each")
        // The same document again: its names are remembered, not reported twice.
        _ = try reader.read(Self.template(conditions: (0..<perDocument).map { "c9-\($0)" }), name: "remote.json")
        #expect(lines.withLock { $0.count } == 10)
    }
}
