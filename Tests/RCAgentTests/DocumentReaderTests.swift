import RCCore
import RCService
import RCTemplate
import Testing

/// ``DocumentReader`` reads a template with conditions through the evaluator alone, not also
/// through the reader of templates without conditions: the evaluator must refuse everything that
/// reader refuses, and read the same values where both accept.
@Suite struct DocumentReaderTests {
    let reader = DocumentReader(deviceId: "device", signals: [], log: Logger { _ in })

    /// The same parameters as a template without conditions and as one with an empty list of them.
    static func documents(parameters: String, version: String = #"{"versionNumber": "3"}"#) -> [String] {
        [
            #"{"version": \#(version), "parameters": {\#(parameters)}}"#,
            #"{"version": \#(version), "parameters": {\#(parameters)}, "conditions": []}"#,
        ]
    }

    @Test(arguments: [
        (#""p": "v""#, "parameters.p must be an object"),
        (#""p": {"defaultValue": null}"#, "parameters.p.defaultValue"),
        (#""p": {"defaultValue": "v"}"#, "parameters.p.defaultValue"),
        (#""p": {"defaultValue": {}}"#, #"parameters.p.defaultValue needs "value" or "useInAppDefault": true"#),
        (#""p": {"defaultValue": {"value": null}}"#, "parameters.p.defaultValue"),
        (#""p": {"defaultValue": {"value": 3}}"#, "parameters.p.defaultValue.value must be a string"),
        (#""a\u0000b": {"defaultValue": {"value": "x"}}"#, "a key may not contain NUL"),
        (#""p": {"defaultValue": {"value": "\u0000"}}"#, "a value may not contain NUL"),
    ])
    func whatEitherReaderRefusesIsRefusedWithOrWithoutConditions(parameters: String, reason: String) {
        for document in Self.documents(parameters: parameters) {
            let error = #expect(throws: DocumentError.self, "\(document)") {
                try reader.read(Array(document.utf8), name: "remote.json")
            }
            #expect(error?.reason.contains(reason) == true, "\(document): \(error?.reason ?? "accepted")")
        }
    }

    @Test func aVersionPastSixtyFourDigitsIsRefusedWithOrWithoutConditions() throws {
        let longest = String(repeating: "7", count: RemoteDocument.maximumVersionDigits)
        for document in Self.documents(parameters: "", version: #"{"versionNumber": "\#(longest)"}"#) {
            #expect(
                try reader.read(Array(document.utf8), name: "remote.json")
                    == .update(values: [:], templateVersion: longest))
        }
        for document in Self.documents(parameters: "", version: #"{"versionNumber": "\#(longest)7"}"#) {
            #expect(throws: DocumentError.self, "\(document)") {
                try reader.read(Array(document.utf8), name: "remote.json")
            }
        }
    }

    @Test func bothReadTheSameValues() throws {
        let parameters = #"""
            "a": {"defaultValue": {"value": "1"}}, "b": {"defaultValue": {"useInAppDefault": true}},
            "c": {}, "d": {"defaultValue": {"value": ""}}, "caf\u00e9": {"defaultValue": {"value": "é"}}
            """#
        let read = try Self.documents(parameters: parameters).map {
            try reader.read(Array($0.utf8), name: "remote.json")
        }
        #expect(read[0] == .update(values: ["a": "1", "d": "", "café": "é"], templateVersion: "3"))
        #expect(read[1] == read[0])
    }
}
