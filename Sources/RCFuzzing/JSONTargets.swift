import RCCore

/// The JSON documents and messages: the JSON reader itself and what is built on it.
enum JSONTargets {
    static let all = [json, defaults, remoteDocument, pushMessage, controlRequest, controlResponse]

    /// `JSONValue.parse`, under every document the agent reads.
    static let json = FuzzTarget(
        "json", checkJson,
        """
        JSON text: errors say \"invalid JSON: <reason>\"; a parsed value re-serialises to compact text that \
        parses to an equal value and serialises identically
        """)

    private static func checkJson(_ check: Checker, _ bytes: [UInt8]) throws(PropertyViolation) -> FuzzOutcome {
        let value: JSONValue
        do { value = try JSONValue.parse(bytes) } catch {
            try check.requireNamed(error, prefix: "invalid JSON: ")
            try check.require(contains(error.reason, " at line "), "error \"\(error)\" does not say where")
            return .rejected
        }
        try check.require(depth(of: value) <= JSONValue.maximumDepth, "accepted nesting past the limit")
        try requireRoundTrip(value, check)
        return .accepted
    }

    private static func depth(of value: JSONValue) -> Int {
        switch value {
        case let .array(items): 1 + (items.map(depth(of:)).max() ?? 0)
        case let .object(members): 1 + (members.map { depth(of: $0.value) }.max() ?? 0)
        default: 0
        }
    }

    /// The defaults file.
    static let defaults = FuzzTarget(
        "defaults", checkDefaults,
        """
        defaults.json: errors name the document; accepted values are exactly the object's members as Remote \
        Config stores them
        """)

    private static func checkDefaults(_ check: Checker, _ bytes: [UInt8]) throws(PropertyViolation) -> FuzzOutcome {
        let values: [String: String]
        do { values = try DefaultsDocument.parse(bytes, name: "defaults.json") } catch {
            try check.requireNamed(error, prefix: "defaults.json: ")
            return .rejected
        }
        let members = (try? JSONValue.parse(bytes))?.objectMembers
        try check.require(members != nil, "accepted a document that is not a JSON object")
        for (key, value) in members ?? [] {
            try check.require(values[key] == value.configText, "key \(key.debugDescription) reads wrong")
        }
        try check.require(values.count == Set((members ?? []).map(\.key)).count, "extra or missing keys")
        return .accepted
    }

    /// `RemoteDocument.parse`, checked against what the JSON tree says the document holds.
    static let remoteDocument = FuzzTarget(
        "remote-document", checkRemoteDocument,
        """
        fetch response or template: read member by member as its JSON tree reads; errors name the document; \
        accepted values are exactly the entries' (or parameters' default) values, none holding NUL; template \
        versions are decimal
        """)

    private static func checkRemoteDocument(_ check: Checker, _ bytes: [UInt8]) throws(PropertyViolation) -> FuzzOutcome
    {
        // Read member by member, the document is what its tree says, or refused in the same words.
        let pulled = Result { () throws(JSONParseError) in try DocumentShape(bytes: bytes) }
        let tree = Result { () throws(JSONParseError) in try JSONValue.parse(bytes) }
        switch (pulled, tree) {
        case let (.success(shape), .success(json)):
            try check.require("\(shape)" == "\(DocumentShape(json))", "read member by member: \(shape)")
        case let (.failure(a), .failure(b)):
            try check.require(a.reason == b.reason, "read member by member: \(a.reason), the tree: \(b.reason)")
        default:
            try check.require(false, "read member by member: \(pulled), the tree: \(tree)")
        }
        let name = "remote.json"
        guard let document = try check.parsed(name, { try RemoteDocument.parse(bytes, name: $0) }) else {
            return .rejected
        }
        let json = try? tree.get()
        try check.require(json?.objectMembers != nil, "accepted a document that is not a JSON object")
        guard case let .update(values, version) = document else {
            try check.require(json?["state"] == .string("NO_CHANGE"), "NO_CHANGE without that state")
            return .accepted
        }
        // The values a second way: straight from the tree.
        var expected: [String: String] = [:]
        if let parameters = json?["parameters"]?.objectMembers {
            for (key, parameter) in parameters where parameter["defaultValue"]?["useInAppDefault"] != .bool(true) {
                if let value = parameter["defaultValue"]?["value"]?.stringValue { expected[key] = value }
            }
        } else if json?["state"] == nil || json?["state"] == .string("UPDATE") {
            for (key, value) in json?["entries"]?.objectMembers ?? [] { expected[key] = value.configText }
        }
        try check.require(values == RemoteValues(expected), "values \(values) differ from the document's \(expected)")
        for (key, value) in values {
            try check.require(
                !key.utf8.contains(0) && !value.utf8.contains(0), "accepted NUL in \(key.debugDescription)")
        }
        if let version {
            try check.require(
                !version.isEmpty && version.utf8.allSatisfy { $0 >= 48 && $0 <= 57 }, "template version \(version)")
        }
        return .accepted
    }

    /// FCM-style messages (socket `message` op, MQTT payloads, `rcagent notify`).
    static let pushMessage = FuzzTarget(
        "push-message", checkPushMessage,
        """
        FCM-style message JSON: errors say \"bad message: <reason>\"; a parsed message's data (with its live \
        activity rebuilt) re-encoded as {\"data\"} and as a {\"message\"} envelope parses back equal; stale \
        and version follow the data
        """)

    private static func checkPushMessage(_ check: Checker, _ bytes: [UInt8]) throws(PropertyViolation) -> FuzzOutcome {
        guard let json = try? JSONValue.parse(bytes) else { return .rejected }
        let message: PushMessage
        do { message = try PushMessage.parse(json) } catch {
            try check.requireNamed(error, prefix: "bad message: ")
            return .rejected
        }
        try check.require(message.marksStale == (message.data["CONFIG_STATE"] != nil), "marksStale")
        if let version = message.data["templateVersion"] ?? message.data["latestTemplateVersionNumber"] {
            try check.require(message.templateVersion == Int64(version), "template version \(version) lost")
        }
        let data = JSONValue.object(message.data.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })
        var body: [(key: String, value: JSONValue)] = [("data", data)]
        switch message.liveActivity {
        case nil: break
        case let .success(activity):
            // The canonical rebuild must read back as the same activity.
            if let apns = activity.json["message"]?["apns"] { body.append(("apns", apns)) }
            if let token = activity.fcmToken { body.append(("token", .string(token))) }
        case let .failure(error):
            try check.requireNamed(error, prefix: "bad message: ")
            return .accepted
        }
        for encoded in [JSONValue.object(body), .object([("message", .object(body))])] {
            let again = try? PushMessage.parse(encoded)
            try check.require(again == message, "\(encoded.compactText) reads back as \(String(describing: again))")
        }
        return .accepted
    }

    static let knownOps: Set<String> = ["ping", "status", "fetch", "activate", "mark-stale", "message", "watch"]

    /// Control socket lines, framed as the daemon frames them (newline-delimited, blank lines skipped,
    /// a line over the limit ends the connection).
    static let controlRequest = FuzzTarget(
        "control-request", checkControlRequest,
        """
        control socket lines: a request that parses has a known op and re-encodes to an equal request; a \
        refused line gets a request error code, a message and a well-formed error response
        """)

    private static func checkControlRequest(_ check: Checker, _ bytes: [UInt8]) throws(PropertyViolation) -> FuzzOutcome
    {
        var accepted = false
        for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            if line.count > ControlRequest.maximumLineLength { break }
            if line.allSatisfy({ $0 == 32 || $0 == 9 || $0 == 13 }) { continue }
            let request: ControlRequest
            do { request = try ControlRequest.parse(Array(line)) } catch {
                let codes: [ControlError.Code] = [.badJSON, .badRequest, .badMessage, .unknownOp]
                try check.require(codes.contains(error.code), "unexpected error code \(error.code)")
                try check.require(!error.message.isEmpty, "empty error message")
                let response = (try? JSONValue.parse(error.json.compactText)).flatMap { try? ControlError.parse($0) }
                try check.require(response == error, "error response \(error.json.compactText) does not read back")
                continue
            }
            accepted = true
            let op = (try? JSONValue.parse(Array(line)))?["op"]?.stringValue
            try check.require(op.map(knownOps.contains) == true, "accepted an unknown op \(String(describing: op))")
            try check.require(request.json["op"]?.stringValue == op, "the request re-encodes another op")
            let again = try? ControlRequest.parse(Array(request.json.compactText.utf8))
            try check.require(again == request, "\(request.json.compactText) reads back differently")
        }
        return accepted ? .accepted : .rejected
    }

    /// The daemon's answers, one JSON value per line, read as every response type the CLI decodes.
    static let controlResponse = FuzzTarget(
        "control-response", checkControlResponse,
        """
        control socket answers: each response type either decodes a line (and then re-encodes to text that \
        decodes to an equal value, also with a member added) or refuses it with an error naming the member
        """)

    private static func checkControlResponse(_ check: Checker, _ bytes: [UInt8]) throws(PropertyViolation)
        -> FuzzOutcome
    {
        var accepted = false
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            guard let json = try? JSONValue.parse(Array(line)) else { continue }
            accepted = try checkResponse(PingResponse.self, json, check) || accepted
            accepted = try checkResponse(StatusResponse.self, json, check) || accepted
            accepted = try checkResponse(FetchResponse.self, json, check) || accepted
            accepted = try checkResponse(ActivateResponse.self, json, check) || accepted
            accepted = try checkResponse(MarkStaleResponse.self, json, check) || accepted
            accepted = try checkResponse(MessageResponse.self, json, check) || accepted
            accepted = try checkResponse(WatchAck.self, json, check) || accepted
            accepted = try checkResponse(ReloadResponse.self, json, check) || accepted
            accepted = try checkWatchEvent(json, check) || accepted
        }
        return accepted ? .accepted : .rejected
    }

    /// decode(encode(x)) == x for whatever `R` accepts; a refusal names the member at fault.
    private static func checkResponse<R: ControlResponse>(_ type: R.Type, _ json: JSONValue, _ check: Checker)
        throws(PropertyViolation) -> Bool
    {
        let reply: Result<R, ControlError>
        do { reply = try R.reply(json) } catch {
            try check.requireNamed(error, prefix: "invalid response: ")
            try check.require(
                json.objectMembers == nil || !error.field.isEmpty, "\(R.self): error \"\(error)\" names no member")
            return false
        }
        let text = reply.json.compactText
        let again = (try? JSONValue.parse(text)).flatMap { try? R.reply($0) }
        try check.require(again == reply, "\(R.self): \(text) reads back differently")
        if case let .object(members) = json {
            // Tolerant of members it does not know: a newer daemon may add some.
            let extended = JSONValue.object(members + [("x-added", .array([.null, .bool(true)]))])
            try check.require((try? R.reply(extended)) == reply, "\(R.self): an added member changes the reading")
        }
        return true
    }

    private static func checkWatchEvent(_ json: JSONValue, _ check: Checker) throws(PropertyViolation) -> Bool {
        let event: WatchEvent
        do { event = try WatchEvent.parse(json) } catch {
            try check.requireNamed(error, prefix: "invalid response: ")
            try check.require(json.objectMembers == nil || !error.field.isEmpty, "error \"\(error)\" names no member")
            return false
        }
        let text = event.json.compactText
        let again = (try? JSONValue.parse(text)).flatMap { try? WatchEvent.parse($0) }
        try check.require(
            again.map {
                $0.kind == event.kind && $0.at == event.at && sameValue(.object($0.fields), .object(event.fields))
            }
                == true, "watch event \(text) reads back differently")
        return true
    }

    /// Compact text parses back to the same value, and after that one round the text is stable.
    /// Numbers compare by value: JSON has one number type, and a double with an integral value (2^54,
    /// written "1.8014398509481984e+16") reads back as an integer.
    static func requireRoundTrip(_ value: JSONValue, _ check: Checker) throws(PropertyViolation) {
        let text = value.compactText
        let again: JSONValue
        do { again = try JSONValue.parse(text) } catch {
            throw PropertyViolation(
                target: check.target, message: "compact text \(text.debugDescription) does not parse: \(error)",
                location: "\(#fileID):\(#line)")
        }
        try check.require(sameValue(again, value), "compact text \(text.debugDescription) parses to another value")
        let stable = again.compactText
        try check.require(
            (try? JSONValue.parse(stable))?.compactText == stable,
            "compact text \(stable.debugDescription) is not stable")
    }

    static func sameValue(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        // At double precision: "1.2783922337203684e+18", the shortest text of a double, reads back as
        // the integer 1278392233720368400, which is not that double's exact value but rounds to it.
        case let (.integer(i), .double(d)), let (.double(d), .integer(i)): Double(i) == d
        case let (.array(x), .array(y)): x.count == y.count && zip(x, y).allSatisfy { sameValue($0, $1) }
        case let (.object(x), .object(y)):
            x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && sameValue($0.value, $1.value) }
        default: a == b
        }
    }
}
