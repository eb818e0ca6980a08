import Foundation
import Glibc
import TestSupport
import Testing

/// Hooks across a config reload: the runner a reload replaces finishes its hook before the new one
/// starts, and the new runner reads the directory and timeout the reload set.
@Suite struct HookReloadTests {
    /// Regression (fails until fixed): hooks run one at a time (HookRunner). A reload that
    /// changes HookTimeout= (or HooksDirectory=) replaced the runner while the old one was still
    /// running a hook, so the next activation's hook ran at the same time as the old one.
    @Test func aReloadDoesNotLetHooksRunAtTheSameTime() throws {
        let (sandbox, hooks) = try HookTests().sandbox(timeout: "30s")
        let record = sandbox.root.appendingPathComponent("record").path
        let go = sandbox.root.appendingPathComponent("go").path
        // The hook for template 2 holds until the test says go; every run logs its start and end.
        try HookTests().hook(
            "50-slow", in: hooks,
            """
            echo "start $RCAGENT_TEMPLATE_VERSION" >> \(record)
            if [ "$RCAGENT_TEMPLATE_VERSION" = 2 ]; then while [ ! -e \(go) ]; do sleep 0.02; done; fi
            echo "end $RCAGENT_TEMPLATE_VERSION" >> \(record)
            """)
        let daemon = try sandbox.startServing(version: 1)
        #expect(eventually { HookTests().lines(record).contains("end 1") }, "\(daemon.log)")
        try sandbox.publish(Sandbox.document(version: 2))
        #expect(eventually { HookTests().lines(record).contains("start 2") }, "\(daemon.log)")

        try sandbox.writeConfig(extra: "[Agent]\nHooksDirectory=\(hooks.path)\nHookTimeout=40s\n")
        #expect(try sandbox.cli("reload").stdout == "reloaded: Agent.HookTimeout changed\n")
        try sandbox.publish(Sandbox.document(version: 3))
        #expect(try eventually { try sandbox.cli("get", "key_0").stdout == "v3\n" }, "\(daemon.log)")
        // Run one at a time, the hook for template 3 waits for the one for template 2: give it
        // the time it would need to run alongside, then let template 2's hook finish.
        _ = eventually(3) { HookTests().lines(record).contains("end 3") }
        try #require(FileManager.default.createFile(atPath: go, contents: nil))
        #expect(eventually { Set(HookTests().lines(record)).isSuperset(of: ["end 2", "end 3"]) }, "\(daemon.log)")
        #expect(HookTests().lines(record) == ["start 1", "end 1", "start 2", "end 2", "start 3", "end 3"])
        #expect(daemon.stop() == 0)
    }
}
