import Foundation
import Glibc
import TestSupport
import Testing

/// The realtime stream holds at most one bounded message: an object that grows past the limit,
/// or one that never ends (an endless line), is skipped without being held, said once, and the
/// stream goes on (or, reconnected, serves again).
@Suite struct SecurityRealtimeSizeTests {
    @Test func anEndlessRealtimeLineCostsNoMemoryAndIsSaid() throws {
        let (sandbox, server) = try FirebaseSourceTests().sandbox(realtime: "yes", push: "Jitter=0")
        try server.publish(version: 1, entries: ["a": "1"])
        let daemon = try sandbox.startDaemon()
        #expect(eventually { server.openStreams == 1 }, "\(daemon.log)")
        #expect(try eventually { try sandbox.cli("get", "a").stdout == "1\n" })
        let before = try SecurityMQTTSizeTests.peakMemory(daemon)

        // 20 MB of one object that ends: skipped to its end, the next message on the same stream is read.
        let pad = String(repeating: "a", count: 20 << 20)
        try server.pushLine(#"{"latestTemplateVersionNumber": "99", "pad": ""# + pad + #""}"#)
        try FirebaseSourceTests().announceTemplate2(sandbox, server, daemon)
        #expect(daemon.log.contains("Ignoring an unreadable realtime message: a message over 65536 bytes"))
        #expect(!daemon.log.contains("template 99"), "\(daemon.log)")

        // 20 MB of an object that never ends: nothing after it on this stream is a message; a
        // dropped stream reconnects and the next announcement is heard.
        try server.pushLine(#"{"latestTemplateVersionNumber": ""# + pad)
        try server.dropStreams()
        #expect(eventually { server.requests(api: "realtime").count >= 2 }, "\(daemon.log)")
        #expect(eventually { server.openStreams == 1 }, "\(daemon.log)")
        try server.publish(version: 3, entries: ["a": "3"])
        try server.push(["latestTemplateVersionNumber": "3"])
        #expect(try eventually { try sandbox.cli("get", "a").stdout == "3\n" }, "\(daemon.log)")
        let after = try SecurityMQTTSizeTests.peakMemory(daemon)
        // Two 20 MB messages: a few chunks of curl's at a time, never a message.
        #expect(after - before < 8 << 20, "peak grew from \(before) to \(after) bytes")
        #expect(daemon.stop() == 0)
    }
}
