import RCCore
import RCSigning
import Testing

/// The payload `{"version", "expires", "document"}`: versions only as canonical integers.
@Suite struct SignedPayloadTests {
    static func refusal(_ text: String) -> String {
        do {
            _ = try SignedPayload.parse(Array(text.utf8))
            return "accepted"
        } catch { return error.description }
    }

    static func payload(version: String) -> String {
        #"{"version":\#(version),"expires":"2030-01-01T00:00:00Z","document":{}}"#
    }

    @Test func aPayloadRoundTrips() throws {
        let payload = SignedPayload(
            version: 42, expires: Timestamp(iso8601: "2030-01-01T00:00:00Z")!, document: .object([("a", .integer(1))]))
        #expect(try SignedPayload.parse(payload.bytes) == payload)
        #expect(
            String(decoding: payload.bytes, as: UTF8.self)
                == #"{"version":42,"expires":"2030-01-01T00:00:00Z","document":{"a":1}}"#)
    }

    @Test func nonCanonicalVersionsAreRefused() {
        for version in ["1.0", "1e3", "10E0", "-0.0", "7.5", "9223372036854775808"] {
            #expect(
                Self.refusal(Self.payload(version: version)).contains("without a fraction or exponent"), "\(version)")
        }
        for version in ["0", "-0", "-3", "9007199254740992"] {
            #expect(Self.refusal(Self.payload(version: version)).contains("is not between 1 and"), "\(version)")
        }
        #expect(Self.refusal(Self.payload(version: #""7""#)).contains("must be an integer, not a string"))
        // "01" is no JSON number at all.
        #expect(Self.refusal(Self.payload(version: "01")).hasPrefix("signature: payload: invalid JSON"))
        #expect(Self.refusal(Self.payload(version: "9007199254740991")) == "accepted")
    }

    @Test func expiresAndDocumentAreRequired() {
        #expect(Self.refusal(#"{"version":1,"document":{}}"#).contains("\"expires\" must be"))
        #expect(Self.refusal(#"{"version":1,"expires":"tomorrow","document":{}}"#).contains("is not an ISO 8601 time"))
        #expect(Self.refusal(#"{"version":1,"expires":"2030-01-01T00:00:00Z"}"#).contains("\"document\" must be"))
        #expect(Self.refusal(#"{"version":1,"expires":"2030-01-01T00:00:00Z","document":[]}"#).contains("\"document\""))
        #expect(
            Self.refusal(#"{"expires":"2030-01-01T00:00:00Z","document":{}}"#) == "signature: payload: no \"version\"")
    }
}
