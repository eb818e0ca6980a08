import Foundation
import Glibc
import RCCore
import RCSystem
import TestSupport
import Testing

/// Maintenance windows and holds with the real binaries: a fetched snapshot that comes outside
/// every `Window=` or under an `rcagent hold` waits (the old values stay, `status` says until when),
/// and is activated when the window opens, when the hold ends or when a forgotten hold reaches
/// `HoldLimit=`; `rcagent activate --now` and a push carrying `"activate": "now"` pass at once. The
/// daemon's wall clock is set with libfaketime; its monotonic clock, which its waits use, is real.
///
/// Time-limited so that a hang fails rather than blocks CI; the limit is long because under the whole
/// suite the synchronous end-to-end tests can hold every cooperative-pool thread for minutes, and a
/// test's clock runs while it waits for one (one of these passed in 8 s alone and ran past 2 minutes there).
@Suite(.timeLimit(.minutes(10))) struct DeferralTests {
    /// The daemon with its wall clock started at `time` (UTC, `YYYY-MM-DD HH:MM:SS`), before the real
    /// time: libfaketime moves timer deadlines by its offset too, so these tests wait for no timer.
    private func startNightly(_ sandbox: Sandbox, at time: String) throws -> DaemonProcess {
        try sandbox.publish(Sandbox.document(version: 1))
        let daemon = try DaemonProcess(
            sandbox,
            environment: FakedClock.environment(at: time))
        try daemon.waitUntilReady()
        return daemon
    }

    /// A sandbox with the window 02:00-04:00 UTC, its daemon started at noon (the wall clock of
    /// 2025-12-02 12:00 UTC) and a fetch done: version 1 waits for the window.
    private func startWaitingForTheNightWindow() throws -> (Sandbox, DaemonProcess) {
        let sandbox = try Sandbox(extraConfig: "[Activation]\nWindow=*-*-* 02:00-04:00 UTC\n")
        let daemon = try startNightly(sandbox, at: "2025-12-02 12:00:00")
        #expect(try sandbox.cli("fetch", "--wait").status == 0)
        return (sandbox, daemon)
    }

    /// Version 1 is active, nothing waits, and the daemon said what ended the wait.
    private func expectTheWaitEnded(_ sandbox: Sandbox, _ daemon: DaemonProcess, by what: String) throws {
        #expect(try value(sandbox) == "v1\n", "\(daemon.log)")
        #expect(try deferred(sandbox) == nil)
        #expect(daemon.log.contains("The deferred activation of template 1 is due: \(what)"), "\(daemon.log)")
    }

    /// The daemon serving version 1, an `rcagent hold` running, a watch, and version 2 fetched
    /// under the hold.
    private func startHeld(_ sandbox: Sandbox) throws -> (DaemonProcess, Subprocess, SocketClient) {
        let daemon = try sandbox.startServing(version: 1)
        let hold = try sandbox.startHold(reason: "payment", command: "cat >/dev/null")
        let watch = try SocketClient(path: sandbox.socketPath)
        #expect(watch.watch())
        try sandbox.publish(Sandbox.document(version: 2))
        #expect(try sandbox.cli("fetch", "--wait", "--force").status == 0)
        return (daemon, hold, watch)
    }

    private func status(_ sandbox: Sandbox) throws -> [String: Any] {
        let result = try sandbox.cli("status", "--json")
        return try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout)")
    }

    private func deferred(_ sandbox: Sandbox) throws -> [String: Any]? {
        let activation = try #require(try status(sandbox)["activation"] as? [String: Any])
        return activation["deferred"] as? [String: Any]
    }

    private func value(_ sandbox: Sandbox, _ key: String = "key_0") throws -> String {
        try sandbox.cli("get", key).stdout
    }

    @Test
    func aWindowThatExcludesNowDefersUntilItOpens() throws {
        // The real clock: libfaketime moves the daemon's timer deadlines by its offset too (its
        // timerfd_settime), so the wait itself is measured unfaked. A one-minute window that opens
        // at the next minute at least 15 s away.
        let now = Int64(Date().timeIntervalSince1970)
        var opening = (now / 60 + 1) * 60
        if opening - now < 15 { opening += 60 }
        let minute = (opening % 86_400) / 60
        func clock(_ minute: Int64) -> String {
            String(format: "%02d:%02d", Int(minute / 60), Int(minute % 60))
        }
        let window = "*-*-* \(clock(minute))-\(clock(minute + 1)) UTC"
        let openingText = Timestamp(milliseconds: opening * 1_000).iso8601
        let sandbox = try Sandbox(extraConfig: "[Activation]\nWindow=\(window)\n")
        try sandbox.publish(Sandbox.document(version: 1))
        let daemon = try sandbox.startDaemon()
        let watch = try SocketClient(path: sandbox.socketPath)
        #expect(watch.watch())
        // The start-up fetch may have stored it already: this one is then "no change", which says
        // that the template waits all the same.
        let fetch = try sandbox.cli("fetch", "--wait")
        #expect(fetch.status == 0, "\(fetch.stderr)")
        #expect(fetch.stdout.contains("deferred: template 1 waits until \(openingText)"), "\(fetch.stdout)")

        // Fetched and kept; nothing active.
        let waiting = try #require(try deferred(sandbox), "\(daemon.log)")
        #expect(waiting["templateVersion"] as? String == "1")
        #expect(waiting["until"] as? String == openingText)
        #expect(waiting["why"] as? String == "window")
        #expect(try value(sandbox) == "")
        #expect(try sandbox.cli("status").stdout.contains("deferred:     template 1 waits until \(openingText)"))
        #expect(daemon.log.contains("Deferred the activation of template 1 until \(openingText)"))

        // The window opens: activated, without anyone asking.
        let activated = watch.event(timeout: 100) { $0["event"] as? String == "activated" }
        #expect(activated?["templateVersion"] as? String == "1", "\(daemon.log)")
        #expect(Int64(Date().timeIntervalSince1970) >= opening)
        #expect(try value(sandbox) == "v1\n")
        #expect(try deferred(sandbox) == nil)
        daemon.stop()
    }

    @Test
    func aDeferralOutlivesTheDaemon() throws {
        let (sandbox, first) = try startWaitingForTheNightWindow()
        #expect(try deferred(sandbox) != nil, "\(first.log)")
        #expect(first.stop() == 0)

        // With the daemon down, status still says what waits.
        #expect(try deferred(sandbox)?["until"] as? String == "2025-12-03T02:00:00Z")
        // Started again inside the window (its clock says so): the wait is over at once.
        let second = try startNightly(sandbox, at: "2025-12-03 02:30:00")
        try expectTheWaitEnded(sandbox, second, by: "the daemon started")
        second.stop()
    }

    @Test
    func aReloadThatDropsTheWindowEndsTheWait() throws {
        let (sandbox, daemon) = try startWaitingForTheNightWindow()
        #expect(try deferred(sandbox)?["why"] as? String == "window", "\(daemon.log)")

        // A window that is open now: the reload's look finds nothing in the way.
        try sandbox.writeConfig(extra: "[Activation]\nWindow=*-*-* 11:00-13:00 UTC\n")
        let reload = try sandbox.cli("reload")
        #expect(reload.status == 0, "\(reload.stderr)")
        try expectTheWaitEnded(sandbox, daemon, by: "the config was reloaded")
        daemon.stop()
    }

    @Test
    func activateSaysUntilWhenAndNowOverrides() throws {
        let (sandbox, daemon) = try startWaitingForTheNightWindow()
        #expect(try deferred(sandbox)?["until"] as? String == "2025-12-03T02:00:00Z", "\(daemon.log)")

        let asked = try sandbox.cli("activate")
        #expect(asked.status == 0, "\(asked.stderr)")
        #expect(asked.stdout.contains("deferred: template 1 waits until 2025-12-03T02:00:00Z"), "\(asked.stdout)")
        #expect(try value(sandbox) == "")

        let forced = try sandbox.cli("activate", "--now")
        #expect(forced.status == 0, "\(forced.stderr)")
        #expect(forced.stdout.contains("key_0\n"), "\(forced.stdout)")
        #expect(try value(sandbox) == "v1\n")
        #expect(try deferred(sandbox) == nil)
        daemon.stop()
    }

    /// `fetch --wait` for a template that waits says so, and until when. (An HTTP source: a file
    /// source's watch could fetch it first, and the `fetch` would say "no change".)
    @Test
    func fetchWaitSaysTheActivationIsDeferredAndUntilWhen() throws {
        let sandbox = try Sandbox()
        let server = try ConfigServer(in: sandbox)
        try server.serve(Sandbox.document(version: 1))
        try sandbox.writeConfig(
            extra: "[Source]\nType=http\nURL=\(server.url)\n[Activation]\nWindow=*-*-* 02:00-04:00 UTC\n")
        let daemon = try DaemonProcess(
            sandbox,
            environment: FakedClock.environment(at: "2025-12-02 12:00:00"))
        try daemon.waitUntilReady()
        try server.serve(Sandbox.document(version: 2))
        let fetch = try sandbox.cli("fetch", "--force", "--wait")
        #expect(fetch.status == 0, "\(fetch.stderr)")
        #expect(
            fetch.stdout.hasPrefix(
                "fetched template 2; deferred: template 2 waits until 2025-12-03T02:00:00Z (outside every maintenance window), since 2025-12-02T12:0"
            ), "\(fetch.stdout)\n\(daemon.log)")
        #expect(fetch.stdout.hasSuffix("; rcagent activate --now overrides\n"), "\(fetch.stdout)")
        #expect(try value(sandbox) == "")
        daemon.stop()
    }

    @Test
    func aPushWithActivateNowPassesTheWindow() throws {
        let (sandbox, daemon) = try startWaitingForTheNightWindow()
        #expect(try sandbox.cli("activate", "--now").status == 0)

        // An ordinary ping: the new template is fetched and waits.
        try sandbox.publish(Sandbox.document(version: 2))
        let ping = try sandbox.cli("notify", #"{"data": {"CONFIG_STATE": "STALE"}}"#, "--wait")
        #expect(ping.status == 0, "\(ping.stderr)")
        #expect(try deferred(sandbox)?["templateVersion"] as? String == "2", "\(daemon.log)")
        #expect(try value(sandbox) == "v1\n")

        // A kill switch: a newer template, activated at once.
        try sandbox.publish(Sandbox.document(version: 3))
        let push = try sandbox.cli("notify", #"{"data": {"CONFIG_STATE": "STALE", "activate": "now"}}"#, "--wait")
        #expect(push.status == 0, "\(push.stderr)")
        #expect(try value(sandbox) == "v3\n", "\(daemon.log)")
        #expect(try deferred(sandbox) == nil)
        #expect(try status(sandbox)["fetched"].flatMap { ($0 as? [String: Any])?["pending"] as? Bool } == false)
        daemon.stop()
    }

    @Test
    func aHoldDefersAndItsReleaseActivates() throws {
        let sandbox = try Sandbox()
        // A hook records what it hears: the deferral, then the activation, and nothing in between.
        let hooks = sandbox.root.appendingPathComponent("hooks")
        let record = sandbox.root.appendingPathComponent("record").path
        try FileManager.default.createDirectory(at: hooks, withIntermediateDirectories: true)
        let hook = hooks.appendingPathComponent("10-record").path
        try sandbox.write("#!/bin/sh\necho \"$RCAGENT_EVENT $RCAGENT_TEMPLATE_VERSION\" >> \(record)\n", to: hook)
        chmod(hook, 0o755)
        try sandbox.writeConfig(extra: "[Agent]\nHooksDirectory=\(hooks.path)\n")
        func heard() -> String { (try? String(contentsOfFile: record, encoding: .utf8)) ?? "" }
        let (daemon, hold, watch) = try startHeld(sandbox)
        let waiting = try #require(try deferred(sandbox), "\(daemon.log)")
        #expect(waiting["templateVersion"] as? String == "2")
        #expect(waiting["why"] as? String == "hold")
        // A hold ends by HoldLimit= (1h) at the latest.
        #expect(waiting["until"] is String)
        #expect(try value(sandbox) == "v1\n")
        let event = watch.event { $0["event"] as? String == "activation-deferred" }
        #expect(event?["templateVersion"] as? String == "2")
        #expect(event?["why"] as? String == "hold")
        #expect(eventually(30) { heard().contains("activation-deferred 2\n") }, "\(heard())")
        #expect(!heard().contains("activated 2"))

        hold.closeInput()
        #expect(hold.finish().status == 0)
        let activated = watch.event { $0["event"] as? String == "activated" }
        #expect(activated?["templateVersion"] as? String == "2", "\(daemon.log)")
        #expect(try value(sandbox) == "v2\n")
        #expect(eventually(30) { heard().hasSuffix("activation-deferred 2\nactivated 2\n") }, "\(heard())")
        #expect(try deferred(sandbox) == nil)
        daemon.stop()
    }

    @Test
    func aForgottenHoldStopsDeferringAtHoldLimit() throws {
        let sandbox = try Sandbox(extraConfig: "[Activation]\nHoldLimit=8s\n")
        let (daemon, hold, watch) = try startHeld(sandbox)
        #expect(try deferred(sandbox)?["why"] as? String == "hold", "\(daemon.log)")

        // The hold still runs, past its limit: it defers no more, and the daemon says so once.
        let activated = watch.event(timeout: 60) { $0["event"] as? String == "activated" }
        #expect(activated?["templateVersion"] as? String == "2", "\(daemon.log)")
        #expect(try value(sandbox) == "v2\n")
        #expect(daemon.log.components(separatedBy: "has run past HoldLimit=8s").count == 2, "\(daemon.log)")
        #expect(try HoldLock(path: HoldLock.path(stateDirectory: sandbox.statePath)).isHeld())

        // A newer template is not held back by the forgotten hold either.
        try sandbox.publish(Sandbox.document(version: 3))
        #expect(try sandbox.cli("fetch", "--wait", "--force").status == 0)
        #expect(try value(sandbox) == "v3\n")
        hold.closeInput()
        _ = hold.finish()
        daemon.stop()
    }
}
