import RCAdmin
import RCCore
import Testing

/// `template versions`: the listVersions answer as a table, or as JSON unchanged.
@Suite struct TemplateVersionTableTests {
    let versions: [JSONValue]

    init() throws {
        let answer = try JSONValue.parse(
            #"""
            {"versions": [
              {"versionNumber": "44", "updateTime": "2026-11-30T08:01:02.345678Z",
               "updateUser": {"email": "ci@project.iam.gserviceaccount.com", "name": "CI"},
               "updateOrigin": "REST_API", "updateType": "ROLLBACK", "rollbackSource": "42",
               "description": "Rollback to 42"},
              {"versionNumber": "43", "updateTime": "2026-11-29T10:15:30Z",
               "updateUser": {"email": "ana@example.com"}, "updateOrigin": "CONSOLE",
               "updateType": "INCREMENTAL_UPDATE", "description": "Bump linux_required_update to 1.4.0"},
              {"versionNumber": "1", "updateTime": "not a time", "updateOrigin": "ADMIN_SDK_NODE",
               "updateType": "FORCED_UPDATE", "description": "evil\u001b]0;title\u0007\nsecond line"}
            ]}
            """#)
        guard case let .array(items)? = answer["versions"] else { throw TemplateError("fixture has no versions") }
        versions = items
    }

    @Test func tableHasOneAlignedRowPerVersion() {
        let expected = """
            VERSION  UPDATED               USER                                ORIGIN          TYPE                DESCRIPTION
            44       2026-11-30T08:01:02Z  ci@project.iam.gserviceaccount.com  REST_API        ROLLBACK from 42    Rollback to 42
            43       2026-11-29T10:15:30Z  ana@example.com                     CONSOLE         INCREMENTAL_UPDATE  Bump linux_required_update to 1.4.0
            1        not a time            -                                   ADMIN_SDK_NODE  FORCED_UPDATE       evil\\x1b]0;title\\x07\\nsecond line

            """
        #expect(TemplateVersionTable.text(versions) == expected)
    }

    @Test func noVersionsIsJustTheHeader() {
        #expect(TemplateVersionTable.text([]) == "VERSION  UPDATED  USER  ORIGIN  TYPE  DESCRIPTION\n")
        #expect(TemplateVersionTable.json([]) == "[]\n")
    }

    @Test func jsonIsThePassthroughOfTheAnswer() throws {
        let text = TemplateVersionTable.json(versions)
        #expect(text.hasSuffix("\n"))
        #expect(try JSONValue.parse(text) == .array(versions))
        #expect(!text.dropLast().contains("\n"), "one line, control characters stay JSON escapes")
    }

    @Test func longDescriptionsAreElided() throws {
        let long = try JSONValue.parse(
            #"{"versionNumber": "2", "description": "\#(String(repeating: "d", count: 300))"}"#)
        let row = TemplateVersionTable.text([long]).split(separator: "\n")[1]
        #expect(row.contains("…(300 chars)…"))
        #expect(row.unicodeScalars.count < 120)
    }
}
