import RCAdmin
import RCCore
import TestSupport
import Testing

/// The file `template get -o` writes and `template publish` reads, on real files.
@Suite struct TemplateFileTests {
    @Test func writesReviewableTextAndReadsItBack() throws {
        try TemporaryDirectory.with { dir in
            let template = try TemplateFixtures.template()
            let path = dir.file("template.json")
            try TemplateFile.write(path: path, template: template, etag: "etag-0123456789-42")
            let text = String(decoding: try dir.read("template.json"), as: UTF8.self)
            #expect(text.hasPrefix("{\n  \"conditions\": [\n    {\n      \"expression\": "))
            #expect(text.contains("\n  \"etag\": \"etag-0123456789-42\",\n  \"parameterGroups\": {\n"))
            #expect(text.hasSuffix("\n  }\n}\n"))
            #expect(!text.contains("\t"))
            let (read, etag) = try TemplateFile.read(path: path)
            #expect(etag == "etag-0123456789-42")
            #expect(read.compactText == template.compactText)
            #expect(read["etag"] == nil, "the ETag is not a template field")
            // Same template, same bytes: a second get of an unchanged template is no git diff.
            try TemplateFile.write(path: path, template: read, etag: etag)
            #expect(String(decoding: try dir.read("template.json"), as: UTF8.self) == text)
        }
    }

    @Test func prettyTextHasTwoSpaceIndentationAndSortedMembers() throws {
        // Built in code with members out of order: the file is the same as for the parsed template.
        let template = JSONValue.object([
            (
                "parameters",
                .object([("b", .object([("defaultValue", .object([("value", .string("2"))]))])), ("a", .object([]))])
            ),
            ("conditions", .array([])),
            ("version", .object([("versionNumber", .string("7")), ("description", .string("tab\there"))])),
        ])
        let expected = """
            {
              "conditions": [],
              "etag": "e-1",
              "parameters": {
                "a": {},
                "b": {
                  "defaultValue": {
                    "value": "2"
                  }
                }
              },
              "version": {
                "description": "tab\\there",
                "versionNumber": "7"
              }
            }

            """
        #expect(try TemplateFile.text(template: template, etag: "e-1") == expected)
        #expect(
            try JSONValue.parse(expected).compactText
                == TemplateFile.text(template: template, etag: "e-1").compactParsed)
    }

    @Test func emptyTemplateAndNoETag() throws {
        #expect(try TemplateFile.text(template: .object([]), etag: nil) == "{}\n")
        #expect(try TemplateFile.text(template: .object([]), etag: "e") == "{\n  \"etag\": \"e\"\n}\n")
        let (template, etag) = try TemplateFile.parse(Array("{}\n".utf8), path: "t.json")
        #expect(template == .object([]))
        #expect(etag == nil)
        #expect(try TemplateFile.parse(Array(#"{"etag": null}"#.utf8), path: "t.json").etag == nil)
    }

    @Test func anETagInsideTheTemplateIsReplacedNotDoubled() throws {
        let template = try JSONValue.parse(#"{"etag": "old", "parameters": {}}"#)
        let text = try TemplateFile.text(template: template, etag: "new")
        #expect(text == "{\n  \"etag\": \"new\",\n  \"parameters\": {}\n}\n")
        #expect(try TemplateFile.text(template: template, etag: nil) == "{\n  \"parameters\": {}\n}\n")
    }

    @Test func badFilesNameTheFileAndThePlace() throws {
        try TemporaryDirectory.with { dir in
            let broken = try dir.write(
                "broken.json", "{\n  \"parameters\": {\n    \"a\": {\"defaultValue\": }\n  }\n}\n")
            #expect {
                _ = try TemplateFile.read(path: broken)
            } throws: { error in
                let reason = (error as? TemplateError)?.reason ?? ""
                return reason.hasPrefix("\(broken): invalid JSON: ")
                    && reason.hasSuffix("expected a value, found '}' at line 3, column 27 (byte 46)")
            }
            let missing = dir.file("missing.json")
            #expect(throws: TemplateError("\(missing): no such file")) { _ = try TemplateFile.read(path: missing) }
        }
        let cases: [(String, String)] = [
            ("[]", "t.json: expected a Remote Config template (a JSON object), got array"),
            (#"{"etag": 7}"#, #"t.json: "etag" must be a string, got number"#),
            (#"{"etag": ""}"#, #"t.json: "etag" "": must be a non-empty single-line string"#),
            (#"{"etag": "a\nb"}"#, #"t.json: "etag" "a\nb": must be a non-empty single-line string"#),
            (#"{"conditions": {}}"#, #"t.json: "conditions" must be a JSON array, got object"#),
            (#"{"parameterGroups": {"g": []}}"#, #"t.json: parameter group "g" must be a JSON object, got array"#),
            (
                #"{"parameterGroups": {"g": {"parameters": {"k": 1}}}}"#,
                #"t.json: parameter "k" in group "g" must be a JSON object, got number"#
            ),
        ]
        for (text, message) in cases {
            #expect(throws: TemplateError(message)) { _ = try TemplateFile.parse(Array(text.utf8), path: "t.json") }
        }
        // A file name with a control character is escaped where it is named.
        #expect(throws: TemplateError(#"t\x1b.json: expected a Remote Config template (a JSON object), got string"#)) {
            _ = try TemplateFile.parse(Array(#""x""#.utf8), path: "t\u{1b}.json")
        }
    }

    /// A template file larger than any answer this tool takes from Google (16 MiB) is no template
    /// Google would take either: refused by its size before it is parsed, let alone sent.
    @Test func aFileLargerThanAnyTemplateIsRefusedBeforeParsing() throws {
        try TemporaryDirectory.with { dir in
            let value = String(repeating: "x", count: 17 << 20)
            let path = try dir.write("huge.json", #"{"parameters": {"p": {"defaultValue": {"value": "\#(value)"}}}}"#)
            #expect {
                try TemplateFile.read(path: path)
            } throws: { error in
                "\(error)".contains("huge.json") && "\(error)".contains("larger than \(16 << 20) bytes")
            }
        }
    }

    /// Issue 25: indentation multiplied the size of a deep document by its depth (65 KB gzipped
    /// from the server became 1.7 GB of text). Whatever the shape, the pretty text stays within a
    /// fixed factor of the compact one, and still reads back as the same value.
    @Test func prettyTextIsBoundedByAFixedFactorOfTheCompactText() throws {
        func nested(_ depth: Int, _ bottom: JSONValue) -> JSONValue {
            (0..<depth).reduce(bottom) { inner, _ in .array([inner, .integer(0)]) }
        }
        let zeros = JSONValue.array(Array(repeating: .integer(0), count: 50_000))
        let shapes = [
            nested(98, zeros),  // the issue's document: tiny elements 100 levels down
            nested(9, zeros),  // the same at the deepest level still indented
            .object((0..<2_000).map { ("k\(10_000 + $0)", nested(97, .array([]))) }),
        ]
        for value in shapes {
            var compact = ""
            value.write(to: &compact)
            let pretty = TemplateFile.prettyText(value)
            #expect(pretty.utf8.count <= 12 * compact.utf8.count, "\(pretty.utf8.count) for \(compact.utf8.count)")
            #expect(try JSONValue.parse(pretty) == value)
        }
        // A real template keeps its indentation at every level it has.
        #expect(
            TemplateFile.prettyText(nested(9, .array([.integer(1)]))).contains(
                "\n" + String(repeating: " ", count: 20) + "1\n"))
    }

    @Test func prettyTextParsesBackToTheSameValue() throws {
        let values = [
            try TemplateFixtures.template(),
            try JSONValue.parse(#"{"a": [1, -2.5, true, null, "\u0001\"\\", [], {}], "b": {"c": [[{}]]}}"#),
            JSONValue.string("x"), JSONValue.array([]),
        ]
        for value in values {
            #expect(try JSONValue.parse(TemplateFile.prettyText(value)) == value)
        }
    }
}

extension String {
    fileprivate var compactParsed: String { (try? JSONValue.parse(self).compactText) ?? "(invalid)" }
}
