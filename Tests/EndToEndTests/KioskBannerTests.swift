import Foundation
import Glibc
import TestSupport
import Testing

/// examples/kiosk-banner/kiosk-banner run as an rcagent hook, exactly as the daemon runs one:
/// `RCAGENT_EVENT=activity-*` and the activity (the `activity list --json` item) on stdin. The page
/// it renders is read back: every activity shown, every value escaped for HTML, nothing else.
/// Its `watch` form follows `rcagent activity watch --json` of a running daemon.
@Suite struct KioskBannerTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("examples/kiosk-banner/kiosk-banner").path

    /// One banner directory and the hook's runs against it.
    struct Banner {
        let sandbox: Sandbox
        var directory: String { sandbox.root.appendingPathComponent("banner").path }
        var page: String { (try? String(contentsOfFile: directory + "/index.html", encoding: .utf8)) ?? "" }

        /// Runs the hook for `event` with `stdin` (nil: none, as for a config event).
        func hook(_ event: String, _ stdin: String?) throws -> ProcessResult {
            let environment = [
                "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin", "RCAGENT_EVENT": event,
                "KIOSK_BANNER_DIR": directory,
            ]
            // In the sandbox: a file the script wrongly wrote to its working directory is seen there.
            let child = try Subprocess(
                KioskBannerTests.script, [], environment: environment, in: sandbox.root.path, input: stdin != nil)
            if let stdin {
                child.write(stdin)
                child.closeInput()
            }
            return child.finish()
        }
    }

    /// An activity as `rcagent activity list --json` prints it.
    static func activity(
        id: String, state: String = "active", title: String, contentState: [String: Any],
        alert: [String: String]? = nil
    ) throws -> String {
        let object: [String: Any] = [
            "id": id, "state": state, "attributesType": "OrderAttributes", "attributes": ["title": title],
            "contentState": contentState, "alert": alert.map { $0 as Any } ?? NSNull(), "timestamp": 1_700_000_000,
            "startedAt": "2023-11-14T22:13:20Z", "updatedAt": "2023-11-14T22:13:20Z", "endedAt": NSNull(),
            "staleAt": NSNull(), "dismissAt": NSNull(),
        ]
        return String(
            decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    @Test func rendersEveryActivityEscaped() throws {
        let banner = Banner(sandbox: try Sandbox())
        let hostile = #"<script>alert("x")</script> & 'quoted'"#
        let started = try banner.hook(
            "activity-started",
            try Self.activity(
                id: #"order-<17>""#, title: "Order " + hostile, contentState: ["status": hostile, "eta": 5],
                alert: ["title": "Ready <b>now</b>", "body": #"at "counter" 2"#]))
        #expect(started.status == 0, "\(started.stderr)")
        let page = banner.page
        #expect(page.hasPrefix("<!DOCTYPE html>") && page.hasSuffix("</body></html>\n"), "\(page)")
        let escaped = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &apos;quoted&apos;"
        #expect(page.contains("<h2>Order \(escaped)</h2>"), "\(page)")
        #expect(page.contains("<dt>status</dt><dd>\(escaped)</dd>"), "\(page)")
        #expect(page.contains("<dt>eta</dt><dd>5</dd>"), "\(page)")
        #expect(
            page.contains(
                #"<p class="alert"><strong>Ready &lt;b&gt;now&lt;/b&gt;</strong> at &quot;counter&quot; 2</p>"#),
            "\(page)")
        #expect(page.contains(#"<section class="activity active" id="activity-order-&lt;17&gt;&quot;">"#), "\(page)")
        // Nothing from the activity became markup: the only tags are the page's own.
        #expect(!page.contains("<script") && !page.contains("<b>") && !page.contains("'quoted'"), "\(page)")

        // A second order, then the first one's update: both shown, the first with its new state.
        #expect(
            try banner.hook(
                "activity-started",
                try Self.activity(id: "order-18", title: "Order 18", contentState: ["status": "Queued"])
            ).status == 0)
        #expect(
            try banner.hook(
                "activity-updated",
                try Self.activity(id: #"order-<17>""#, title: "Order 17", contentState: ["status": "Ready"])
            ).status == 0)
        #expect(banner.page.components(separatedBy: "<section ").count - 1 == 2, "\(banner.page)")
        #expect(banner.page.contains("<dt>status</dt><dd>Ready</dd>") && !banner.page.contains("script"))
        #expect(banner.page.contains("<dt>status</dt><dd>Queued</dd>"))

        // Ended: still shown, marked; removed: gone; none left: the idle line.
        #expect(
            try banner.hook(
                "activity-ended",
                try Self.activity(
                    id: "order-18", state: "ended", title: "Order 18", contentState: ["status": "Collected"])
            ).status == 0)
        #expect(banner.page.contains(#"<section class="activity ended" id="activity-order-18">"#), "\(banner.page)")
        #expect(banner.page.contains(#"<p class="state">ended</p>"#))
        for id in [#"order-<17>""#, "order-18"] {
            let removed = try banner.hook(
                "activity-removed", try Self.activity(id: id, state: "ended", title: "", contentState: [:]))
            #expect(removed.status == 0, "\(removed.stderr)")
        }
        #expect(!banner.page.contains("<section"), "\(banner.page)")
        #expect(banner.page.contains(#"<p class="idle">No orders in progress.</p>"#), "\(banner.page)")
    }

    /// An id as long as the agent accepts (256 bytes; APNs tokens run to 200 hex digits) is more than
    /// a file name holds once in hex: the banner still renders, updates and removes it.
    @Test func theLongestIdStillRenders() throws {
        let banner = Banner(sandbox: try Sandbox())
        let long = String(repeating: "f", count: 256)
        let other = String(repeating: "e", count: 101)
        for id in [long, other] {
            let started = try banner.hook(
                "activity-started", try Self.activity(id: id, title: "Order", contentState: ["status": "Queued"]))
            #expect(started.status == 0, "\(started.stderr)")
        }
        let updated = try banner.hook(
            "activity-updated", try Self.activity(id: long, title: "Order", contentState: ["status": "Ready"]))
        #expect(updated.status == 0, "\(updated.stderr)")
        #expect(banner.page.contains("id=\"activity-\(long)\""), "\(banner.page)")
        // The long one shows its update; the other (101 bytes, also hashed) keeps its own content.
        #expect(banner.page.contains("<dd>Ready</dd>") && banner.page.contains("<dd>Queued</dd>"), "\(banner.page)")
        #expect(banner.page.components(separatedBy: "<section ").count - 1 == 2, "\(banner.page)")
        for id in [long, other] {
            let removed = try banner.hook(
                "activity-removed", try Self.activity(id: id, state: "ended", title: "", contentState: [:]))
            #expect(removed.status == 0, "\(removed.stderr)")
        }
        #expect(!banner.page.contains("<section"), "\(banner.page)")
        let left = try FileManager.default.contentsOfDirectory(atPath: banner.directory + "/activities")
        #expect(left.isEmpty, "\(left)")
    }

    @Test func otherEventsAndBadInputLeaveThePage() throws {
        let banner = Banner(sandbox: try Sandbox())
        #expect(
            try banner.hook(
                "activity-started", try Self.activity(id: "a", title: "Order A", contentState: ["status": "Queued"])
            ).status == 0)
        let before = banner.page
        #expect(before.contains("Order A"))

        // A config event runs every hook too: the banner ignores it without reading stdin.
        let activated = try banner.hook("activated", nil)
        #expect(activated.status == 0 && activated.stderr.isEmpty, "\(activated.stderr)")
        // Input that is not an activity fails loudly (the daemon logs it) and changes nothing.
        for stdin in ["", "not json", #"{"state":"active"}"#, #"{"id":""}"#, "[]"] {
            let bad = try banner.hook("activity-updated", stdin)
            #expect(bad.status != 0, "\(stdin)")
            #expect(bad.stderr.contains("kiosk-banner: not an activity"), "\(stdin): \(bad.stderr)")
            #expect(banner.page == before, "\(stdin)")
        }
        let stray = try FileManager.default.contentsOfDirectory(atPath: banner.sandbox.root.path)
        #expect(!stray.contains { $0.contains(".tmp.") }, "\(stray)")
        // An id that looks like a path names no file outside the banner's directory.
        #expect(
            try banner.hook(
                "activity-started", try Self.activity(id: "../../x", title: "Order B", contentState: ["s": 1])
            ).status == 0)
        let files = try FileManager.default.contentsOfDirectory(atPath: banner.directory + "/activities").sorted()
        #expect(files == ["2e2e2f2e2e2f78.html", "61.html"], "\(files)")
        #expect(!FileManager.default.fileExists(atPath: banner.sandbox.root.appendingPathComponent("x.html").path))
    }

    /// `kiosk-banner watch` against a running daemon: what was there before it started, then each
    /// start, update and removal the daemon applies, as the page shows them.
    @Test func theWatchFormFollowsTheDaemon() throws {
        let sandbox = try Sandbox()
        let banner = Banner(sandbox: sandbox)
        let daemon = try sandbox.startDaemon()
        defer { daemon.stop() }
        // Timestamps one second apart: messages in the same second would be "not newer" and ignored.
        var timestamp = Int(Date().timeIntervalSince1970)
        func send(_ event: String, _ id: String, _ extra: [String]) throws {
            timestamp += 1
            let message = try sandbox.run(
                "rcadmin",
                ["activity", event, "--live-activity-token", id, "--timestamp", String(timestamp), "--dry-run"] + extra)
            #expect(message.status == 0, "\(message.stderr)")
            #expect(try sandbox.cli("notify", message.stdout).status == 0)
        }
        let start = ["--attributes-type", "OrderAttributes", "--attributes", #"{"title":"Order 17"}"#]
        try send("start", "order-17", start + ["--content-state", #"{"status":"<b>baking</b>"}"#])

        var environment = ProcessInfo.processInfo.environment
        environment["RCAGENT_CONFIG"] = sandbox.configPath
        environment["KIOSK_BANNER_DIR"] = banner.directory
        environment["PATH"] = Binaries.directory.path + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        let watch = try Subprocess(Self.script, ["watch"], environment: environment, in: sandbox.root.path)
        defer { kill(watch.pid, SIGKILL) }
        #expect(eventually { banner.page.contains("&lt;b&gt;baking&lt;/b&gt;") }, "\(banner.page)")

        try send("start", "order-18", start + ["--content-state", #"{"status":"queued"}"#])
        #expect(eventually { banner.page.contains("queued") }, "\(banner.page)")
        try send("update", "order-17", ["--content-state", #"{"status":"ready"}"#])
        #expect(eventually { banner.page.contains("ready") && !banner.page.contains("baking") }, "\(banner.page)")
        try send("end", "order-18", ["--dismissal-date", "1"])
        #expect(eventually { !banner.page.contains("queued") }, "\(banner.page)")
        #expect(banner.page.contains("ready"), "\(banner.page)")
    }
}
