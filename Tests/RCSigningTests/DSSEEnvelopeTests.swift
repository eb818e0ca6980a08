import RCCore
import RCSigning
import Testing

/// Reading DSSE envelopes: the format, and hostile envelopes refused with an error naming the place.
@Suite struct DSSEEnvelopeTests {
    static func parse(_ text: String, limit: Int = 1 << 20) throws(SigningError) -> DSSEEnvelope {
        try DSSEEnvelope.parse(Array(text.utf8), payloadLimit: limit)
    }

    static func refusal(_ text: String, limit: Int = 1 << 20) -> String {
        do {
            _ = try parse(text, limit: limit)
            return "accepted"
        } catch { return error.description }
    }

    @Test func paeIsDSSEsPreAuthenticationEncoding() {
        // The example of DSSE's protocol.md.
        let pae = DSSEEnvelope.pae(type: "http://example.com/HelloWorld", body: Array("hello world".utf8))
        #expect(String(decoding: pae, as: UTF8.self) == "DSSEv1 29 http://example.com/HelloWorld 11 hello world")
        #expect(String(decoding: DSSEEnvelope.pae(type: "", body: []), as: UTF8.self) == "DSSEv1 0  0 ")
    }

    @Test func standardAndURLSafeBase64WithOrWithoutPaddingAreRead() throws {
        // 0xfb 0xff encodes as "+/8=" (standard) and "-_8" (URL-safe, unpadded).
        for text in ["+/8=", "+/8", "-_8=", "-_8"] {
            let envelope = try Self.parse(
                #"{"payloadType":"t","payload":"\#(text)","signatures":[{"sig":"AA=="}],"extra":{"a":[1]}}"#)
            #expect(envelope.payload == [0xfb, 0xff])
            #expect(envelope.signatures == [.init(keyID: "", bytes: [0])])
        }
        #expect(DSSEBase64.encode([0xfb, 0xff]) == "+/8=")
        #expect(DSSEBase64.encode(Array("hello world".utf8)) == "aGVsbG8gd29ybGQ=")
    }

    @Test func anEnvelopeRoundTripsThroughItsJSON() throws {
        let envelope = DSSEEnvelope(payload: Array("{}".utf8), signatures: [.init(keyID: "k", bytes: [1, 2, 3])])
        #expect(try DSSEEnvelope.parse(Array(envelope.json.compactText.utf8), payloadLimit: 100) == envelope)
    }

    @Test func badBase64NamesTheField() {
        let sig = #"[{"sig":"AA=="}]"#
        #expect(
            Self.refusal(#"{"payloadType":"t","payload":"ab$d","signatures":\#(sig)}"#)
                == "signature: envelope: \"payload\" is not base64 (a character outside the alphabet at offset 2)")
        #expect(Self.refusal(#"{"payloadType":"t","payload":"+_8","signatures":\#(sig)}"#).contains("mixed"))
        #expect(Self.refusal(#"{"payloadType":"t","payload":"AB=","signatures":\#(sig)}"#).contains("padding"))
        #expect(Self.refusal(#"{"payloadType":"t","payload":"AB","signatures":\#(sig)}"#).contains("encode nothing"))
        #expect(
            Self.refusal(#"{"payloadType":"t","payload":"","signatures":[{"sig":"A"}]}"#)
                == "signature: envelope: signatures[0].sig is not base64 (a length no encoder writes)")
        #expect(Self.refusal(#"{"payloadType":"t","payload":"","signatures":[{"sig":"A A="}]}"#).contains("offset 1"))
    }

    @Test func hugeSignatureListsAreRefusedBeforeAnyIsRead() {
        let many = Array(repeating: #"{"sig":"!"}"#, count: 10_000).joined(separator: ",")
        #expect(
            Self.refusal(#"{"payloadType":"t","payload":"","signatures":[\#(many)]}"#)
                == "signature: envelope: \"signatures\" lists 10000; at most 16 are read")
        let long = String(repeating: "A", count: 4_000)
        #expect(Self.refusal(#"{"payloadType":"t","payload":"","signatures":[{"sig":"\#(long)"}]}"#).contains("4000"))
    }

    @Test func duplicateKeyIdsAreRefused() {
        #expect(
            Self.refusal(
                #"{"payloadType":"t","payload":"","signatures":[{"keyid":"a","sig":"AA=="},{"keyid":"a","sig":"AQ=="}]}"#
            )
                == "signature: envelope: signatures[1].keyid \"a\" is also signatures[0]'s")
        // Without a keyid (it is optional), two signatures are two signatures.
        #expect(
            Self.refusal(#"{"payloadType":"t","payload":"","signatures":[{"sig":"AA=="},{"sig":"AQ=="}]}"#)
                == "accepted")
    }

    @Test func aPayloadOverTheLimitIsRefusedWithoutDecodingIt() {
        let payload = String(repeating: "QUFB", count: 1_000)  // 3,000 bytes decoded
        #expect(
            Self.refusal(#"{"payloadType":"t","payload":"\#(payload)","signatures":[{"sig":"AA=="}]}"#, limit: 2_000)
                == "signature: envelope: \"payload\" is larger than 2000 bytes")
        #expect(
            Self.refusal(#"{"payloadType":"t","payload":"\#(payload)","signatures":[{"sig":"AA=="}]}"#, limit: 3_000)
                == "accepted")
    }

    @Test func deepNestingAndOtherShapesAreRefused() {
        let deep = String(repeating: "[", count: 5_000) + String(repeating: "]", count: 5_000)
        #expect(Self.refusal(#"{"payloadType":"t","payload":"","signatures":[],"x":\#(deep)}"#).contains("nest"))
        #expect(Self.refusal("[]") == "signature: not a DSSE envelope: the document is a array, not an object")
        #expect(Self.refusal(#"{"entries":{},"state":"UPDATE"}"#).contains("a plain document is refused"))
        #expect(Self.refusal(#"{"payloadType":1,"payload":"","signatures":[]}"#).contains("\"payloadType\""))
        #expect(Self.refusal(#"{"payloadType":"t","payload":"","signatures":{}}"#).contains("must be an array"))
        #expect(Self.refusal(#"{"payloadType":"t","payload":"","signatures":[]}"#).contains("is empty"))
        #expect(Self.refusal(#"{"payloadType":"t","payload":"","signatures":[1]}"#).contains("signatures[0] must be"))
        #expect(
            Self.refusal(#"{"payloadType":"t","payload":"","signatures":[{"keyid":3,"sig":""}]}"#).contains("keyid"))
        #expect(
            Self.refusal(#"{"payloadType":"t","payload":"","payload":"","signatures":[]}"#).contains("duplicate"))
    }
}
