import RCAdmin
import RCCore
import Testing

/// `set-update`'s edit: one parameter's default value changes, nothing else does.
@Suite struct UpdateKeyEditTests {
    func edit(
        _ kind: UpdateKind = .required, _ platform: UpdatePlatform = .linux, version: String = "1.4.0",
        download: String = "https://dl.example.com/rcagent_1.4.0.deb", deadline: String? = nil, message: String? = nil
    ) throws(TemplateError) -> UpdateKeyEdit {
        try UpdateKeyEdit(
            kind: kind, platform: platform, version: version, download: download, deadline: deadline, message: message)
    }

    func refusal(_ make: () throws(TemplateError) -> UpdateKeyEdit) -> String? {
        do {
            _ = try make()
            return nil
        } catch { return error.reason }
    }

    @Test func keyNamesFollowPlatformAndKind() throws {
        #expect(try edit(.required, .linux).key == "linux_required_update")
        #expect(try edit(.recommended, .ios, version: "1.4.0.77").key == "ios_recommended_update")
        #expect(try edit(.required, .android).key == "android_required_update")
    }

    @Test func valueIsCompactJSONInTheDeviceOrder() throws {
        let full = try edit(deadline: "2027-01-31T09:00:00+09:00", message: "Security fix: please update")
        #expect(
            full.valueText
                == #"{"version":"1.4.0","download":"https://dl.example.com/rcagent_1.4.0.deb","#
                + #""deadline":"2027-01-31T00:00:00Z","message":"Security fix: please update"}"#)
        #expect(try edit().valueText == #"{"version":"1.4.0","download":"https://dl.example.com/rcagent_1.4.0.deb"}"#)
        #expect(try edit(deadline: "2027-01-31T00:00:00.250Z").deadline == "2027-01-31T00:00:00.250Z")
        #expect(try edit(deadline: "2027-01-31t00:00:00z").deadline == "2027-01-31T00:00:00Z")
    }

    @Test func theDeviceReadsTheValueBackAndActsOnIt() throws {
        let offer = try edit(deadline: "2027-01-31T00:00:00Z", message: "Bitte aktualisieren ✓")
        let parsed = try #require(try UpdateOffer.parse(offer.valueText, key: offer.key))
        #expect(parsed.version == "1.4.0")
        #expect(parsed.download == "https://dl.example.com/rcagent_1.4.0.deb")
        #expect(parsed.deadline == Timestamp(iso8601: "2027-01-31T00:00:00Z"))
        #expect(parsed.message == "Bitte aktualisieren ✓")
        let verdict = try UpdateChecker(scheme: .dotted).check(
            installed: "1.3.9", installedOrigin: "[App] Version=",
            offers: [(.required, offer.key, offer.valueText)], now: Timestamp(milliseconds: 0))
        #expect(verdict.result == .required)
    }

    @Test func emptyTemplateGetsItsFirstParameter() throws {
        // The seed's script threw on a template without "parameters".
        let result = try edit().apply(to: try JSONValue.parse("{}"))
        #expect(result.outcome == .added)
        #expect(result.place == .topLevel)
        #expect(
            result.template.compactText
                == #"{"parameters":{"linux_required_update":{"defaultValue":{"value":"#
                + #""{\"version\":\"1.4.0\",\"download\":\"https://dl.example.com/rcagent_1.4.0.deb\"}"},"#
                + #""valueType":"JSON"}}}"#)
        #expect(
            result.summary.hasPrefix(#"added "linux_required_update" to the top-level parameters (valueType JSON): "#))
    }

    @Test func newParameterIsInsertedInSortedOrderAmongOthers() throws {
        let template = try TemplateFixtures.template()
        let result = try edit(.required, .android, version: "4.2").apply(to: template)
        #expect(result.outcome == .added)
        let keys = try #require(result.template["parameters"]?.objectMembers?.map(\.key))
        #expect(
            keys == [
                "android_required_update", "hero_banner", "linux_required_update", "new_sync_engine", "welcome_message",
            ])
        let restored = TemplateFixtures.setting(
            ["parameters", "android_required_update"], to: nil, in: result.template)
        #expect(restored.compactText == template.compactText)
    }

    @Test func topLevelParameterKeepsConditionalValuesTypeAndDescription() throws {
        let template = try TemplateFixtures.template()
        let offer = try edit()
        let result = try offer.apply(to: template)
        #expect(result.outcome == .updated)
        #expect(result.place == .topLevel)
        let parameter = try #require(result.template["parameters"]?["linux_required_update"])
        #expect(parameter["defaultValue"] == .object([("value", .string(offer.valueText))]))
        #expect(
            parameter["conditionalValues"] == template["parameters"]?["linux_required_update"]?["conditionalValues"])
        #expect(parameter["description"] == .string("Oldest Linux agent allowed to run"))
        #expect(parameter["valueType"] == .string("JSON"))
        // Everything but the edited value, byte for byte (version block included: the publisher strips it).
        let restored = TemplateFixtures.setting(
            ["parameters", "linux_required_update", "defaultValue"],
            to: template["parameters"]?["linux_required_update"]?["defaultValue"], in: result.template)
        #expect(restored.compactText == template.compactText)
        #expect(
            result.summary
                == #"updated "linux_required_update" in the top-level parameters: default value "#
                + #"{"version":"1.2.0","download":"https://dl.example.com/rcagent_1.2.0.deb"} -> "#
                + #"{"version":"1.4.0","download":"https://dl.example.com/rcagent_1.4.0.deb"}; "#
                + #"devices matching "beta_devices" keep their conditional value"#)
        #expect(result.conditionalValues == ["beta_devices"])
    }

    @Test func groupedParameterIsEditedInItsGroupWithoutATopLevelDuplicate() throws {
        let template = try TemplateFixtures.template()
        let result = try edit(.recommended).apply(to: template)
        #expect(result.place == .group("updates"))
        #expect(result.template["parameters"]?["linux_recommended_update"] == nil)
        let grouped = try #require(
            result.template["parameterGroups"]?["updates"]?["parameters"]?["linux_recommended_update"])
        #expect(grouped["defaultValue"]?["value"]?.stringValue == (try edit(.recommended).valueText))
        #expect(grouped["description"] == .string("Nudge to upgrade"))
        let restored = TemplateFixtures.setting(
            ["parameterGroups", "updates", "parameters", "linux_recommended_update", "defaultValue"],
            to: template["parameterGroups"]?["updates"]?["parameters"]?["linux_recommended_update"]?["defaultValue"],
            in: result.template)
        #expect(restored.compactText == template.compactText)
        #expect(result.summary.contains(#"in parameter group "updates""#))
    }

    @Test func applyingTheSameEditTwiceChangesNothingTheSecondTime() throws {
        for template in [try JSONValue.parse("{}"), try TemplateFixtures.template()] {
            for offer in [try edit(), try edit(.recommended, message: "New sync engine")] {
                let first = try offer.apply(to: template)
                #expect(first.changed)
                let second = try offer.apply(to: first.template)
                #expect(second.outcome == .unchanged)
                #expect(!second.changed)
                #expect(second.template.compactText == first.template.compactText)
                #expect(second.summary.hasPrefix("no change: "))
            }
        }
    }

    @Test func managedDefaultsAreReplacedAndTheChangeSaysSo() throws {
        let template = try TemplateFixtures.template()
        let rollout = try edit(.recommended, .android, version: "4.2.0", download: "https://play.example.com/app")
            .apply(to: template)
        #expect(rollout.replacedManagedValue == "rolloutValue")
        #expect(rollout.summary.contains("(replaces the rolloutValue default with a static value)"))
        #expect(rollout.summary.contains(#"default value {"rolloutValue":{"percent":50,"rolloutId":"rollout_9","#))
        let inApp = try edit(.required, .ios, version: "2.0.0.1").apply(to: template)
        #expect(inApp.replacedManagedValue == "useInAppDefault")
        #expect(inApp.summary.contains("default value (use in-app default) -> "))
        // A parameter without a value type keeps none: only the default value changes.
        #expect(
            inApp.template["parameterGroups"]?["updates"]?["parameters"]?["ios_required_update"]?["valueType"] == nil)
        let plain = try edit().apply(to: template)
        #expect(plain.replacedManagedValue == nil)
    }

    @Test func aKeyInTwoPlacesIsRefusedNamingBoth() throws {
        let template = TemplateFixtures.setting(
            ["parameters", "linux_recommended_update"],
            to: .object([("defaultValue", .object([("value", .string(""))]))]),
            in: try TemplateFixtures.template())
        #expect {
            _ = try edit(.recommended).apply(to: template)
        } throws: { error in
            (error as? TemplateError)?.reason
                == #"parameter "linux_recommended_update" is in both the top-level parameters and parameter group "#
                + #""updates": keys must be unique across a template, remove one of them first"#
        }
    }

    @Test func aValueTypeThatCannotHoldJSONIsRefused() throws {
        let template = try JSONValue.parse(
            #"{"parameters": {"linux_required_update": {"defaultValue": {"value": "0"}, "valueType": "NUMBER"}}}"#)
        #expect {
            _ = try edit().apply(to: template)
        } throws: { error in
            (error as? TemplateError)?.reason
                == #"parameter "linux_required_update" valueType "NUMBER": cannot hold the update's JSON value "#
                + "(JSON or STRING can; change it first)"
        }
        let stringTyped = try JSONValue.parse(
            #"{"parameters": {"linux_required_update": {"defaultValue": {"value": ""}, "valueType": "STRING"}}}"#)
        let result = try edit().apply(to: stringTyped)
        #expect(result.template["parameters"]?["linux_required_update"]?["valueType"] == .string("STRING"))
    }

    @Test func malformedTemplatesAreRefusedWithThePlace() throws {
        let cases: [(String, String)] = [
            (#"[]"#, "template: expected a JSON object, got array"),
            (#"{"parameters": []}"#, #"template: "parameters" must be a JSON object, got array"#),
            (
                #"{"parameters": {"linux_required_update": "x"}}"#,
                #"template: parameter "linux_required_update" must be a JSON object, got string"#
            ),
            (
                #"{"parameterGroups": {"g": {"parameters": 3}}}"#,
                #"template: parameter group "g" "parameters" must be a JSON object, got number"#
            ),
            (
                #"{"conditions": [{"expression": "true"}]}"#,
                #"template: condition 1 must be an object with a non-empty "name""#
            ),
        ]
        for (text, expected) in cases {
            let template = try JSONValue.parse(text)
            #expect(throws: TemplateError(expected)) { _ = try edit().apply(to: template) }
        }
    }

    @Test func versionsAreCheckedInEachPlatformsScheme() throws {
        let accepted: [(UpdatePlatform, String, VersionScheme)] = [
            (.linux, "1.2.3", .dotted), (.linux, "1.2.3.400", .dotted), (.linux, "01.2.3", .dotted),
            (.linux, "1:2.3.4-1+deb12u1", .debian), (.linux, "2.0~rc1", .debian),
            (.ios, "1.2.3", .dotted), (.ios, "1.2.3.500", .dotted),
            (.android, "4", .dotted), (.android, "4.1", .dotted), (.android, "1.2.3.4.5", .dotted),
        ]
        for (platform, version, scheme) in accepted {
            #expect(throws: Never.self, "\(platform) \(version)") {
                try platform.validateVersion(version, linuxScheme: scheme)
            }
        }
        let refused: [(UpdatePlatform, String, VersionScheme, String)] = [
            (
                .linux, "1.2", .dotted,
                #"version "1.2": expected 3 or 4 dot-separated numbers (X.Y.Z[.B]), found 2 part(s) (the dotted scheme rcagent check-update uses)"#
            ),
            (
                .linux, "1.2.3-1", .dotted,
                #"version "1.2.3-1": part 3 "3-1" is not a decimal number (the dotted scheme rcagent check-update uses)"#
            ),
            (
                .linux, "v1.2", .debian,
                #"version "v1.2": version number does not start with digit (the debian scheme rcagent check-update uses)"#
            ),
            (
                .ios, "1.2.beta.3", .dotted,
                #"version "1.2.beta.3": part 3 "beta" is not a decimal number (iOS CFBundleVersion style)"#
            ),
            (
                .ios, "1.2.3.4.5", .dotted,
                #"version "1.2.3.4.5": expected 3 or 4 dot-separated numbers (X.Y.Z[.B]), found 5 part(s) (iOS CFBundleVersion style)"#
            ),
            (
                .ios, "1.2.10000000000000000000", .dotted,
                #"version "1.2.10000000000000000000": part 3 is too large for the iOS update check"#
            ),
            (
                .android, "1.2.3.4.5.6", .dotted,
                #"version "1.2.3.4.5.6": expected 1 to 5 dot-separated numbers (Android versionName), found 6"#
            ),
            (.android, "1..2", .dotted, #"version "1..2": part 2 is not a decimal number (Android versionName)"#),
            (
                .android, "4.1-beta", .dotted,
                #"version "4.1-beta": part 2 is not a decimal number (Android versionName)"#
            ),
            (.android, "4.2147483648", .dotted, #"version "4.2147483648": part 2 is too large for Android's Int"#),
            (.linux, "", .dotted, #"version "": is empty"#),
            (.linux, "1.2.3 ", .debian, #"version "1.2.3 ": must not contain spaces or control characters"#),
            (
                .ios, "1.2.3\u{1b}[2J", .dotted,
                #"version "1.2.3\u001b[2J": must not contain spaces or control characters"#
            ),
        ]
        for (platform, version, scheme, message) in refused {
            #expect(throws: TemplateError(message)) { try platform.validateVersion(version, linuxScheme: scheme) }
        }
    }

    @Test func downloadMustBeAnAbsoluteHTTPSURL() throws {
        #expect(refusal { () throws(TemplateError) in try edit(download: "https://dl.example.com/a.deb") } == nil)
        #expect(refusal { () throws(TemplateError) in try edit(download: "HTTPS://dl.example.com/a.deb") } == nil)
        let refused: [(String, String)] = [
            (
                "http://dl.example.com/a.deb",
                #"download "http://dl.example.com/a.deb": must be an https:// URL (devices download and install what it names)"#
            ),
            ("ftp://dl.example.com/a.deb", #"download "ftp://dl.example.com/a.deb": must be an absolute https:// URL"#),
            ("/srv/a.deb", #"download "/srv/a.deb": must be an absolute https:// URL"#),
            ("https:///a.deb", #"download "https:///a.deb": has no host"#),
            ("https://user@:443/a", #"download "https://user@:443/a": has no host"#),
            (
                "https://dl.example.com/a b.deb",
                #"download "https://dl.example.com/a b.deb": must not contain spaces or control characters"#
            ),
            (
                "https://dl.example.com/a.deb\n",
                #"download "https://dl.example.com/a.deb\n": must not contain spaces or control characters"#
            ),
            (
                "https://dl.example.com/\u{202e}bed.a",
                #"download "https://dl.example.com/\u{202e}bed.a": must not contain spaces or control characters"#
            ),
            ("", #"download "": is empty"#),
        ]
        for (url, message) in refused {
            #expect(refusal { () throws(TemplateError) in try edit(download: url) } == message)
        }
        let lab = try UpdateKeyEdit(
            kind: .required, platform: .linux, version: "1.0.0", download: "http://127.0.0.1:8080/a.deb",
            allowInsecure: true)
        #expect(lab.download == "http://127.0.0.1:8080/a.deb")
    }

    @Test func deadlineAndMessageAreChecked() throws {
        #expect(
            refusal { () throws(TemplateError) in try edit(deadline: "2027-02-30T00:00:00Z") }
                == #"deadline "2027-02-30T00:00:00Z": is not an ISO 8601 time (e.g. 2027-01-31T00:00:00Z or 2027-01-31T09:00:00+09:00)"#
        )
        #expect(
            refusal { () throws(TemplateError) in try edit(deadline: "tomorrow") }?.hasPrefix(#"deadline "tomorrow": "#)
                == true)
        #expect(
            refusal { () throws(TemplateError) in try edit(message: "line one\nline two") }
                == #"message "line one\nline two": must be one line without control characters"#)
        #expect(
            refusal { () throws(TemplateError) in try edit(message: "") } == #"message "": is empty (leave it out)"#)
        #expect(refusal { () throws(TemplateError) in try edit(message: String(repeating: "é", count: 200)) } == nil)
        let long = refusal { () throws(TemplateError) in try edit(message: String(repeating: "x", count: 201)) }
        #expect(long?.hasPrefix(#"message "xxxx"#) == true)
        #expect(long?.contains("…(201 chars)…") == true)
        #expect(long?.hasSuffix("is 201 characters long, at most 200 are allowed") == true)
    }
}
